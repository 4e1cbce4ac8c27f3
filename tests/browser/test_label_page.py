"""The labelling page (to_label.html) in a real browser: headless Chromium driven by chromedriver.

On a real run (the Possible Stories dev split scored by a tiny judge, left by the Rust test
`labelling::` with SCOREKIT_LABEL_FIXTURE=DIR), the page loads with no console error and makes no
network request; ten endings are labelled by keyboard and survive a reload; the export
(`window.scorekitExport`, and the Export button's download) is a file that `scorekit story
--calibration-labels` accepts and that gives the prediction-powered IFSM (`ifsm_ppi`); a hostile
ending shows as text; an export loads back with Import. SCOREKIT_SCREENSHOTS=1 writes
docs/img/labelling.png.

Self-contained: its own driver setup (CHROMIUM, CHROMEDRIVER override the Debian paths). Needs
selenium (pinned by the browser test runner's venv). SCOREKIT_LABEL_FIXTURE=DIR reuses a fixture
already made there; otherwise the Rust test makes one in target/label-fixture.
"""

import json
import os
import pathlib
import subprocess
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

REPO = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


def make_fixture():
    """The run the page is of: reused from SCOREKIT_LABEL_FIXTURE, else made by the Rust test."""
    given = os.environ.get("SCOREKIT_LABEL_FIXTURE")
    if given and (pathlib.Path(given) / "fixture.json").exists():
        return json.loads((pathlib.Path(given) / "fixture.json").read_text())
    folder = pathlib.Path(given) if given else REPO / "target" / "label-fixture"
    env = dict(os.environ, SCOREKIT_LABEL_FIXTURE=str(folder))
    subprocess.run(
        ["cargo", "test", "-p", "scorekit", "--test", "integration", "--", "labelling::"],
        cwd=REPO, env=env, check=True,
    )
    return json.loads((folder / "fixture.json").read_text())


def make_driver(downloads):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in [
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900",
        # Any request that would leave the machine fails: a proxy that does not exist, no DNS.
        "--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
    ]:
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    opts.add_experimental_option("prefs", {
        "download.default_directory": str(downloads),
        "download.prompt_for_download": False,
    })
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


class LabelPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fixture = make_fixture()
        cls.page = pathlib.Path(cls.fixture["page"])
        cls.sample = [json.loads(l) for l in cls.page.with_suffix(".jsonl").read_text().splitlines()]
        cls.tmp = tempfile.TemporaryDirectory()
        cls.downloads = pathlib.Path(cls.tmp.name) / "downloads"
        cls.downloads.mkdir()
        cls.driver = make_driver(cls.downloads)
        cls.url = cls.page.as_uri()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.tmp.cleanup()

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def text(self, element_id):
        return self.driver.find_element(By.ID, element_id).text

    def press(self, key):
        self.driver.find_element(By.TAG_NAME, "body").send_keys(key)

    def console_errors(self):
        return [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def requests(self):
        """Every URL the page asked for since the last call (Chromium's network log)."""
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        return urls

    def open_fresh(self):
        self.driver.get(self.url)
        self.js("window.localStorage.clear()")
        self.driver.get(self.url)

    def test_label_ten_by_keyboard_reload_export_and_score(self):
        self.open_fresh()
        total = len(self.sample)
        self.assertEqual(self.fixture["endings"], total)
        # The first screen is the file's first ending, with its story and question.
        self.assertEqual(self.js("return document.getElementById('ending').textContent"),
                         self.sample[0]["ending"])
        self.assertEqual(self.js("return document.getElementById('passage').textContent"),
                         self.sample[0]["passage"])
        self.assertEqual(self.js("return document.getElementById('question').textContent"),
                         self.sample[0]["question"])
        self.assertIn(f"0 of {total} labelled, {total} left", self.text("count"))

        # Ten endings by keyboard: f or n; then one skipped, and back to check an answer.
        keys = ["f" if i % 3 else "n" for i in range(10)]
        for k in keys:
            self.press(k)
        self.assertEqual(self.js("return document.getElementById('progress').value"), 10)
        self.assertIn(f"10 of {total} labelled, {total - 10} left", self.text("count"))
        self.press("s")
        self.assertIn("(1 skipped)", self.text("count"))
        self.press(Keys.ARROW_LEFT)
        self.press(Keys.ARROW_LEFT)
        self.assertEqual(self.text("position"), f"Ending 10 of {total}")
        self.assertEqual(self.text("answer"),
                         "Your answer: " + ("follows" if keys[9] == "f" else "does not follow"))
        self.press(Keys.ARROW_RIGHT)
        self.assertEqual(self.text("answer"), "Skipped")

        # A reload (or a closed tab) loses nothing: the answers and the place come back.
        self.driver.refresh()
        self.assertIn(f"10 of {total} labelled", self.text("count"))
        self.assertEqual(self.text("position"), f"Ending 11 of {total}")
        exported = self.js("return window.scorekitExport('ann')")
        lines = [json.loads(l) for l in exported.splitlines()]
        self.assertEqual(len(lines), 10)
        for line, item, k in zip(lines, self.sample, keys):
            self.assertEqual(set(line), {"question_id", "ending", "follows", "labeller", "sample"})
            self.assertEqual((line["question_id"], line["ending"]),
                             (item["question_id"], item["ending"]))
            self.assertEqual(line["follows"], k == "f")
            self.assertEqual(line["labeller"], "ann")
            self.assertEqual(line["sample"], self.fixture["sample"])

        # The Export button downloads the same text as labels-<labeller>.jsonl, the labeller
        # asked once (kept with the answers).
        self.driver.find_element(By.ID, "export").click()
        self.assertIn("name first", self.text("message"))
        self.driver.find_element(By.ID, "labeller").send_keys("ann")
        self.driver.find_element(By.ID, "export").click()
        target = self.downloads / "labels-ann.jsonl"
        for _ in range(100):
            if target.exists() and target.read_text() == exported:
                break
            time.sleep(0.1)
        self.assertEqual(target.read_text(), exported)
        self.driver.refresh()
        self.assertEqual(self.driver.find_element(By.ID, "labeller").get_attribute("value"), "ann")

        self.assertEqual(self.console_errors(), [])
        others = [u for u in self.requests() if u != self.url]
        self.assertEqual(others, [], "the page made requests")

        # The export is a label file the run takes: each label gets its model from the sample,
        # and the labelled models get their PPI estimate.
        labels = pathlib.Path(self.tmp.name) / "labels-ann.jsonl"
        labels.write_text(exported)
        args = self.fixture["story_args"]
        run = subprocess.run([self.fixture["scorekit"], *args, "--force", "--calibration-labels",
                              str(labels)], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        out = pathlib.Path(args[args.index("--out") + 1])
        metrics = json.loads((out / "metrics.json").read_text())
        labelled = {}
        for item, _ in zip(self.sample, keys):
            labelled[item["model"]] = labelled.get(item["model"], 0) + 1
        for model, n in labelled.items():
            ppi = metrics["groups"][model]["ifsm_ppi"]
            self.assertEqual(ppi["n_labeled"], n, model)
            self.assertIsInstance(ppi["value"], float, model)
        self.assertEqual(metrics["metrics"]["calibration"]["human"]["label_lines"], 10)

        # Import: the export loads back into an empty browser.
        self.open_fresh()
        self.assertIn(f"0 of {total} labelled", self.text("count"))
        self.assertEqual(self.js("return window.scorekitImport(arguments[0])", exported), 10)
        self.assertIn(f"10 of {total} labelled", self.text("count"))
        self.assertEqual(self.js("return window.scorekitExport('ann')"), exported)
        # An export of another sample is refused whole.
        other = exported.replace(self.fixture["sample"], "0" * 64)
        with self.assertRaises(Exception):
            self.js("return window.scorekitImport(arguments[0])", other)
        self.assertIn(f"10 of {total} labelled", self.text("count"))

        if os.environ.get("SCOREKIT_SCREENSHOTS") == "1":
            # The page as a labeller sees it, on an ordinary ending.
            while self.text("ending") == "" or "<" in self.text("ending"):
                self.press(Keys.ARROW_RIGHT)
            self.driver.set_window_size(1100, 1150)
            self.js("document.activeElement.blur(); window.scrollTo(0, 0)")
            out = REPO / "docs" / "img" / "labelling.png"
            out.parent.mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(out))

    def test_a_hostile_ending_shows_as_text(self):
        self.open_fresh()
        hostile = self.fixture["hostile"]
        at = next(i for i, l in enumerate(self.sample) if l["ending"] == hostile)
        for _ in range(at):
            self.press(Keys.ARROW_RIGHT)
        self.assertEqual(self.text("position"), f"Ending {at + 1} of {len(self.sample)}")
        self.assertEqual(self.js("return document.getElementById('ending').textContent"), hostile)
        self.assertEqual(self.js("return document.querySelectorAll('img, b').length"), 0)
        self.assertIsNone(self.js("return window.pwned"))
        self.assertEqual(self.console_errors(), [])


if __name__ == "__main__":
    unittest.main()
