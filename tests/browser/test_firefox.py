"""report.html and the labelling page in headless Firefox (tests/browser/firefox.py: WebDriver
BiDi, no geckodriver), the checks of the Chromium tests that matter for a second engine: each
page loads with no console error and makes no network request, the numbers shown are
metrics.json's, a hostile ending shows as text and runs nothing, a judge eval item shows its
question with gold and pick marked; ten endings are labelled by keyboard, survive a reload and
export as JSON Lines.

Skipped where Firefox is not installed (scripts/browser/setup.sh installs Debian's firefox-esr).

    scripts/browser/run.sh test_firefox
"""
import json
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from firefox import Firefox, firefox_binary  # noqa: E402
from harness import REPO, run_scorekit  # noqa: E402
from test_label_page import make_fixture  # noqa: E402
from test_report_html import HOSTILE, lines, shown  # noqa: E402

sys.path.insert(0, str(REPO / "scripts/same-outputs"))
import make_inputs  # noqa: E402  (the tiny BERT judge of the story tests)

# Firefox's own background traffic (remote settings, updates), sent whatever page is open.
OWN_HOSTS = (".mozilla.com", ".mozilla.org", ".mozilla.net", ".firefox.com")


def page_requests(proxy):
    """The proxy's requests but Firefox's own background traffic."""
    out = []
    for line in proxy.requests:
        parts = line.split()
        target = parts[1] if len(parts) > 1 else line
        host = target.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
        if not host.endswith(OWN_HOSTS):
            out.append(line)
    return out


@unittest.skipIf(firefox_binary() is None, "no Firefox (scripts/browser/setup.sh installs it)")
class FirefoxPages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="scorekit-firefox-"))
        data = os.environ.get("SCOREKIT_TEST_DATA") or str(REPO / "target/test-data")
        cls.env = {"SCOREKIT_DATA": data,
                   "SCOREKIT_CALIBRATION_CACHE": str(cls.tmp / "calibration-cache")}

        def run(name, *args):
            out = cls.tmp / name
            run_scorekit(*args, "--out", out, "--quiet", env=cls.env)
            return out

        gens = lines(REPO / "data/story/test-demo-generations.jsonl")
        gens[0]["ending"] = HOSTILE
        (cls.tmp / "gen.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
        make_inputs.OUT = cls.tmp
        make_inputs.judge()
        dev = run_scorekit("data", "path", "possible-stories:dev", env=cls.env).stdout.strip()
        cls.dev = {q["question_id"]: q for q in lines(dev)}
        cls.runs = {
            "story": run("story", "story", "--dataset", "possible-stories:test", "--generations",
                         cls.tmp / "gen.jsonl", "--judge", cls.tmp / "judge", "--skip-embedder"),
            "mint": run("mint", "mint", "--outputs", "mint:headline"),
            "judge-eval": run("judge-eval", "judge", "eval", "--judge", cls.tmp / "judge",
                              "--dataset", dev, "--no-calibration", "--device", "cpu"),
        }
        cls.fixture = make_fixture()
        cls.browser = Firefox()

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_quiet(self, what):
        b = self.browser
        self.assertEqual(b.console_errors(), [], f"console errors on {what}")
        self.assertEqual(b.network_requests(), [], f"network requests from {what}")
        self.assertEqual(page_requests(b.proxy), [], "the proxy saw a request of the page")

    def load(self, page):
        b = self.browser
        b.forget()
        b.open(page)
        self.assert_quiet(page)
        return b

    def count(self, kind="items"):
        return int(self.browser.js(
            f"return document.querySelector('.browser[data-kind={kind}]').dataset.count"))

    def test_each_report_loads_quietly_with_every_item_and_the_numbers_of_metrics_json(self):
        for suite, out in self.runs.items():
            with self.subTest(suite=suite):
                b = self.load(out / "report.html")
                self.assertEqual(self.count(), len(lines(out / "items.jsonl")))
                self.assertGreater(b.js("return document.querySelectorAll('figure.chart svg').length"), 0)
                metrics = json.loads((out / "metrics.json").read_text())
                rows = b.js("return Array.prototype.map.call(document.querySelectorAll('tr.estimate'),"
                            " function (tr) { return [tr.dataset.scope, tr.dataset.metric,"
                            " tr.dataset.value, tr.dataset.unit, tr.querySelector('span.v').textContent]; })")
                checked = 0
                for scope, metric, value, unit, text in rows:
                    if "[" in metric:
                        continue
                    node = metrics["metrics"] if scope == "overall" else metrics["groups"][scope]
                    for key in metric.split("."):
                        node = node[key]
                    if node["value"] is None:
                        self.assertEqual(text, "–")
                    else:
                        self.assertEqual(float(value), node["value"])
                        self.assertEqual(text, shown(node["value"], unit))
                    checked += 1
                self.assertGreater(checked, 0)

    def test_a_hostile_ending_shows_as_text_and_runs_nothing(self):
        b = self.load(self.runs["story"] / "report.html")
        box = ".browser[data-kind=items]"
        b.js(f"var s = document.querySelector('{box} input.filter-text'); s.value = 'onerror';"
             " s.dispatchEvent(new Event('input'));")
        self.assertEqual(self.count(), 1)
        b.js(f"document.querySelector('{box} tbody tr').click()")
        self.assertEqual(b.js(f"return document.querySelector('{box} .detail .ending').textContent"),
                         HOSTILE)
        self.assertIsNone(b.js("return window.pwned"))
        self.assertEqual(b.js("return document.images.length"), 0)
        self.assertEqual(b.js("return document.scripts.length"), 2)
        self.assert_quiet("the hostile item")

    def test_a_judge_eval_item_shows_its_question_with_gold_and_pick(self):
        out = self.runs["judge-eval"]
        first = lines(out / "items.jsonl")[0]
        b = self.load(out / "report.html")
        b.js("document.querySelector('.browser[data-kind=items] tbody tr').click()")
        detail = b.js("return document.querySelector('.browser[data-kind=items] .detail').textContent")
        q = self.dev[first["question_id"]]
        self.assertIn(q["question"].strip(), detail)
        marked = b.js("return Array.prototype.map.call(document.querySelectorAll('.detail ol.options li'),"
                      " function (li) { return li.className; })")
        self.assertEqual(len(marked), len(q["options"]))
        self.assertIn("gold", marked[first["gold"]])
        self.assertIn("pick", marked[first["pick"]])

    def test_the_labelling_page_labels_by_keyboard_and_survives_a_reload(self):
        page = Path(self.fixture["page"])
        sample = [json.loads(l) for l in page.with_suffix(".jsonl").read_text().splitlines()]
        b = self.browser
        b.forget()
        b.open(page, ready="document.readyState === 'complete'")
        b.js("window.localStorage.clear()")
        b.reload()
        self.assertEqual(b.js("return document.getElementById('ending').textContent"),
                         sample[0]["ending"])
        keys = ["f" if i % 3 else "n" for i in range(10)]
        for k in keys:
            b.press(k)
        self.assertEqual(b.js("return document.getElementById('progress').value"), 10)
        b.press("ArrowLeft")
        b.press("ArrowRight")
        b.reload()
        self.assertEqual(b.js("return document.getElementById('progress').value"), 10,
                         "the labels survive a reload")
        exported = b.js("return window.scorekitExport('firefox')")
        labels = [json.loads(l) for l in exported.splitlines() if l.strip()]
        self.assertEqual(len(labels), 10)
        self.assertEqual([l["follows"] for l in labels], [k == "f" for k in keys])
        for line, item in zip(labels, sample):
            self.assertEqual(set(line), {"question_id", "ending", "follows", "labeller", "sample"})
            self.assertEqual((line["question_id"], line["ending"], line["labeller"], line["sample"]),
                             (item["question_id"], item["ending"], "firefox", self.fixture["sample"]))
        self.assert_quiet("the labelling page")


if __name__ == "__main__":
    unittest.main()
