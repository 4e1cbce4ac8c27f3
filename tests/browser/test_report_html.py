"""report.html in a real browser (headless Chromium, tests/browser/harness.py), on real-data runs
of each suite made by the scorekit binary under test: the page loads with no console error and no
network request, the numbers shown are metrics.json's, the filters change the row count as the
items say, a hostile ending shows as text and runs nothing, and `scorekit view` of two runs shows
the leaderboard. SCOREKIT_SCREENSHOTS=1 also writes docs/img/report-story.png and
docs/img/report-items.png.

    scripts/browser/run.sh            # after scripts/browser/setup.sh and cargo build
"""
import csv
import json
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import REPO, Browser, run_scorekit  # noqa: E402

sys.path.insert(0, str(REPO / "scripts/same-outputs"))
import make_inputs  # noqa: E402  (the tiny BERT judge of the story tests)

HOSTILE = '</script><img src=x onerror="window.pwned=1">'


def lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def shown(value, unit):
    return f"{value * 100:.1f}" if unit == "%" else f"{value:.3f}"


class ReportHtml(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="scorekit-browser-"))
        data = os.environ.get("SCOREKIT_TEST_DATA") or str(REPO / "target/test-data")
        cls.env = {"SCOREKIT_DATA": data,
                   "SCOREKIT_CALIBRATION_CACHE": str(cls.tmp / "calibration-cache")}

        def run(name, *args):
            out = cls.tmp / name
            run_scorekit(*args, "--out", out, "--quiet", env=cls.env)
            return out

        # Benchmark files by their dataset names (scorekit data), from the test data cache.
        # Story: the test split, the demo generations with a hostile first ending, the tiny judge.
        gens = lines(REPO / "data/story/test-demo-generations.jsonl")
        gens[0]["ending"] = HOSTILE
        cls.gens = cls.tmp / "gen.jsonl"
        cls.gens.write_text("".join(json.dumps(g) + "\n" for g in gens))
        make_inputs.OUT = cls.tmp
        make_inputs.judge()
        cls.dev = run_scorekit("data", "path", "possible-stories:dev", env=cls.env).stdout.strip()
        cls.runs = {
            "story": run("story", "story", "--dataset", "possible-stories:test",
                         "--generations", cls.gens, "--judge", cls.tmp / "judge", "--skip-embedder"),
            "mint": run("mint", "mint", "--outputs", "mint:headline"),
            "muse": run("muse", "muse", "--queries", "muse:queries",
                        "--plans", REPO / "tests/data/muse/hugginggpt.jsonl"),
            "grasp": run("grasp", "grasp", "--responses", REPO / "tests/data/compare/grasp_a.csv",
                         REPO / "tests/data/compare/grasp_b.csv", "--labels", "GPT,Llama",
                         "--test", "level1-binary"),
            # The tiny judge on the dev split's real questions.
            "judge-eval": run("judge-eval", "judge", "eval", "--judge", cls.tmp / "judge",
                              "--dataset", cls.dev, "--no-calibration", "--device", "cpu"),
        }
        cls.pair = [run(f"grasp-{m}", "grasp", "--responses",
                        REPO / f"tests/data/compare/grasp_{m}.csv", "--test", "level1-binary")
                    for m in ("a", "b")]
        cls.view = cls.tmp / "view.html"
        run_scorekit("view", *cls.pair, "--out", cls.view, env=cls.env)
        cls.browser = Browser()

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def load(self, page):
        b = self.browser
        b.open(page)
        self.assertEqual(b.console_errors(), [], f"console errors on {page}")
        self.assertEqual(b.network_requests(), [], f"network requests from {page}")
        self.assertEqual(b.proxy.page_requests(), [], "the proxy saw a request")
        return b

    def browser_of(self, kind="items"):
        return self.browser.one(f".browser[data-kind={kind}]")

    def count(self, box):
        return int(box.get_attribute("data-count"))

    def choose(self, box, name, value):
        Select(self.browser.one(f"select.filter-{name}", box)).select_by_value(value)

    def search(self, box, text):
        field = self.browser.one("input.filter-text", box)
        # Typed as a user does (clear() fires no input event).
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.BACKSPACE)
        if text:
            field.send_keys(text)

    def test_every_suite_loads_without_error_or_network_and_shows_every_item(self):
        for suite, out in self.runs.items():
            with self.subTest(suite=suite):
                b = self.load(out / "report.html")
                self.assertEqual(self.count(self.browser_of()), len(lines(out / "items.jsonl")))
                self.assertGreater(len(b.find("figure.chart svg")), 0, "a chart")
                self.assertIsNone(b.js("return window.pwned"))

    def test_the_numbers_shown_are_metrics_json(self):
        for suite, out in self.runs.items():
            metrics = json.loads((out / "metrics.json").read_text())
            b = self.load(out / "report.html")
            rows = b.find("tr.estimate")
            self.assertGreater(len(rows), 0)
            checked = 0
            for tr in rows:
                scope, metric = tr.get_attribute("data-scope"), tr.get_attribute("data-metric")
                if "[" in metric:
                    continue
                node = metrics["metrics"] if scope == "overall" else metrics["groups"][scope]
                for key in metric.split("."):
                    node = node[key]
                value = node["value"]
                text = tr.find_element(By.CSS_SELECTOR, "span.v").text
                with self.subTest(suite=suite, scope=scope, metric=metric):
                    if value is None:
                        self.assertEqual(text, "–")
                    else:
                        self.assertEqual(float(tr.get_attribute("data-value")), value)
                        self.assertEqual(text, shown(value, tr.get_attribute("data-unit")))
                checked += 1
            self.assertGreater(checked, 0, suite)
        # The headline estimates of each suite are among them.
        b = self.load(self.runs["story"] / "report.html")
        story = json.loads((self.runs["story"] / "metrics.json").read_text())
        for group, g in story["groups"].items():
            tr = b.one(f'tr.estimate[data-scope="{group}"][data-metric="ifsm"]')
            self.assertEqual(tr.find_element(By.CSS_SELECTOR, "span.v").text,
                             shown(g["ifsm"]["value"], "%"))

    def test_filters_change_the_row_count_as_the_items_say(self):
        items = lines(self.runs["story"] / "items.jsonl")
        b = self.load(self.runs["story"] / "report.html")
        box = self.browser_of()
        self.assertEqual(self.count(box), len(items))
        self.choose(box, "model", "human-gold")
        gold = [i for i in items if i["model"] == "human-gold"]
        self.assertEqual(self.count(box), len(gold))
        self.choose(box, "verdict", "follows")
        self.assertEqual(self.count(box), sum(1 for i in gold if i.get("follow") is True))
        self.choose(box, "model", "")
        self.choose(box, "verdict", "")
        self.search(box, "onerror")
        self.assertEqual(self.count(box), 1, "the hostile ending is found by its text")
        self.search(box, "")
        self.assertEqual(self.count(box), len(items))
        # Pages of 50: the table holds one page.
        self.assertEqual(len(b.find("tbody tr", box)), 50)
        b.one("button.next", box).click()
        self.assertEqual(b.one("span.where", box).text, f"51–100 of {len(items)}")

        mint = lines(self.runs["mint"] / "items.jsonl")
        b = self.load(self.runs["mint"] / "report.html")
        box = self.browser_of()
        agent = mint[0]["agent"]
        self.choose(box, "model", agent)
        self.choose(box, "verdict", "success")
        self.assertEqual(self.count(box), sum(1 for i in mint if i["agent"] == agent and i["success"]))

        grasp = lines(self.runs["grasp"] / "items.jsonl")
        b = self.load(self.runs["grasp"] / "report.html")
        box = self.browser_of()
        self.choose(box, "verdict", "invalid")
        self.assertEqual(self.count(box), sum(1 for i in grasp if i["verdict"] == "invalid"))

        cal = lines(self.runs["story"] / "calibration.jsonl")
        b = self.load(self.runs["story"] / "report.html")
        box = self.browser_of("calibration")
        self.assertEqual(self.count(box), len(cal))
        self.choose(box, "group", "positive")
        self.assertEqual(self.count(box), sum(1 for c in cal if c["kind"] == "positive"))

    def test_sorting_orders_the_rows(self):
        items = lines(self.runs["mint"] / "items.jsonl")
        b = self.load(self.runs["mint"] / "report.html")
        box = self.browser_of()
        header = b.one('th[data-column="turns"]', box)
        header.click()
        header.click()  # descending
        column = [th.text for th in b.find("thead th", box)].index("turns")
        first = b.find("tbody tr", box)[0].find_elements(By.TAG_NAME, "td")[column].text
        self.assertEqual(int(first), max(i["turns"] for i in items))

    def test_a_hostile_ending_shows_as_text_and_runs_nothing(self):
        b = self.load(self.runs["story"] / "report.html")
        box = self.browser_of()
        self.search(box, "onerror")
        b.find("tbody tr", box)[0].click()
        ending = b.one(".detail .ending", box)
        self.assertEqual(ending.text, HOSTILE)
        self.assertIsNone(b.js("return window.pwned"))
        self.assertEqual(b.js("return document.images.length"), 0)
        self.assertEqual(b.js("return document.scripts.length"), 2)
        # The gold slot holds the ending, the passage and question are the dataset's.
        gold = b.one(".detail ol.options li.gold", box)
        self.assertIn(HOSTILE, gold.text)
        self.assertEqual(b.console_errors(), [])
        if os.environ.get("SCOREKIT_SCREENSHOTS") == "1":
            self.search(box, "")
            Select(b.one("select.page-size", box)).select_by_value("25")
            b.find("tbody tr", box)[2].click()
            b.js("arguments[0].scrollIntoView(); arguments[0].querySelector('.list').scrollLeft = 0;"
                 " window.scrollBy(0, -60);", box)
            b.screenshot(REPO / "docs/img/report-items.png")

    def test_a_grasp_item_shows_its_prompt_and_response_from_the_results_file(self):
        with open(REPO / "tests/data/compare/grasp_b.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        b = self.load(self.runs["grasp"] / "report.html")
        box = self.browser_of()
        self.choose(box, "model", "Llama")
        b.find("tbody tr", box)[4].click()
        detail = b.one(".detail", box)
        self.assertIn("Item ", detail.text)
        self.assertEqual(b.one(".detail .response", box).text, rows[4]["response"].strip())
        self.assertIn(rows[4]["prompt"], detail.text)

    def test_a_judge_eval_item_shows_its_question_options_gold_and_pick(self):
        out = self.runs["judge-eval"]
        items = lines(out / "items.jsonl")
        questions = {q["question_id"]: q for q in lines(self.dev)}
        b = self.load(out / "report.html")
        box = self.browser_of()
        headers = [th.text for th in b.find("thead th", box)]
        for column in ("line", "question_id", "gold", "pick", "verdict"):
            self.assertIn(column, headers)
        # A scoring judge has no letter mass and, without cyclic orders, no rotations.
        for column in ("letter_mass", "agreement", "cyclic_pick"):
            self.assertNotIn(column, headers)
        self.choose(box, "verdict", "correct")
        self.assertEqual(self.count(box), sum(1 for i in items if i["correct"]))
        self.choose(box, "verdict", "wrong")
        self.assertEqual(self.count(box), sum(1 for i in items if not i["correct"]))
        first = next(i for i in items if not i["correct"])
        row = b.find("tbody tr", box)[0]
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        self.assertEqual(cells[headers.index("question_id")], first["question_id"])
        self.assertEqual(cells[headers.index("gold")], "ABCD"[first["gold"]])
        self.assertEqual(cells[headers.index("pick")], "ABCD"[first["pick"]])
        row.click()
        q = questions[first["question_id"]]
        detail = b.one(".detail", box)
        self.assertIn(q["document"].strip()[:60], detail.text)
        self.assertIn(q["question"].strip(), detail.text)
        options = b.find(".detail ol.options li", box)
        self.assertEqual(len(options), len(q["options"]))
        self.assertIn("gold", options[first["gold"]].get_attribute("class"))
        self.assertIn("pick", options[first["pick"]].get_attribute("class"))
        for li, score in zip(options, first["scores"]):
            shown_score = float(li.text.split("score ", 1)[1].split()[0])
            self.assertAlmostEqual(shown_score, score, places=4)
        self.assertEqual(len(b.find(".detail ol.options li.gold", box)), 1)
        self.assertEqual(len(b.find(".detail ol.options li.pick", box)), 1)
        # The charts: accuracy beside chance, and picks per letter against the gold letters.
        captions = [f.text for f in b.find("figure.chart figcaption")]
        self.assertTrue(any(c.startswith("Judge: accuracy") for c in captions), captions)
        self.assertTrue(any(c.startswith("Judge: share of picks per letter") for c in captions))

    def test_view_of_two_runs_shows_the_leaderboard(self):
        b = self.load(self.view)
        rows = b.find("#leaderboard tbody tr")
        self.assertEqual(len(rows), 2)
        for tr, run in zip(rows, self.pair):
            accuracy = json.loads((run / "metrics.json").read_text())["metrics"]["accuracy"]
            cell = tr.find_element(By.CSS_SELECTOR, 'td[data-metric="accuracy"]')
            self.assertAlmostEqual(float(cell.get_attribute("data-value")), accuracy["value"], 12)
        self.assertGreater(len(b.find("#paired-tests tbody tr")), 0)
        self.assertEqual(len(b.find("section.run")), 2, "both runs below the leaderboard")
        self.assertEqual(len(b.find(".browser[data-kind=items]")), 2)

    @unittest.skipUnless(os.environ.get("SCOREKIT_SCREENSHOTS") == "1", "SCOREKIT_SCREENSHOTS=1")
    def test_screenshot_of_the_story_report(self):
        b = self.load(self.runs["story"] / "report.html")
        b.screenshot(REPO / "docs/img/report-story.png")


if __name__ == "__main__":
    unittest.main()
