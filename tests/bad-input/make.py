#!/usr/bin/env python3
"""Writes the bad-input corpus (tests/bad-input/<suite>/...). Rerun to regenerate; the
expectations (cases.tsv) are kept by hand."""
import json, os
here = os.path.dirname(os.path.abspath(__file__))
shared = os.path.join(here, "../../../shared/data")
def w(rel, data):
    p = os.path.join(here, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

H = "scene,prompt,video_file,gt,response\n"
ok = 'Movement,Is it?,"v/0.mp4,",yes,ok<SEP>yes\n'
w("grasp/empty.csv", "")
w("grasp/header-only.csv", H)
w("grasp/missing-gt-column.csv", "scene,prompt,video_file,response\nMovement,p,v,yes\n")
w("grasp/duplicate-column.csv", "scene,gt,gt,response\nMovement,yes,no,yes\n")
w("grasp/ragged-row.csv", H + ok + 'Movement,p,v,yes,yes,extra\n')
w("grasp/non-utf8.csv", H.encode() + ok.encode() + b"Movement,p,v,yes,ok<SEP>\xff\xfe yes\n")
w("grasp/gt-not-yes-no.csv", H + ok + 'Movement,p,v,perhaps,yes\n')
w("grasp/truncated.jsonl", '{"scene": "Movement", "gt": "yes", "response": "yes"}\n{"scene": "Movement", "gt": "ye\n')
w("grasp/missing-field.jsonl", '{"scene": "Movement", "gt": "yes", "response": "yes"}\n{"scene": "Movement", "response": "yes"}\n')
w("grasp/wrong-type.jsonl", '{"scene": "Movement", "gt": 1, "response": "yes"}\n')
w("grasp/nan.jsonl", '{"scene": "Movement", "gt": "yes", "response": NaN}\n')
w("grasp/not-an-object.jsonl", '["Movement", "yes", "yes"]\n')
w("grasp/huge-line.jsonl", '{"scene": "Movement", "gt": "yes", "response": "' + "yes " * 300000 + '"\n')
w("grasp/open-unknown-scene.csv", H + 'NoSuchScene,p,v,red,ok<SEP>red\n')
w("grasp/open-unknown-label.csv", H + 'Color,p,v,purple,ok<SEP>red\n')
# Once inline runs of tests/integration/grasp.rs: CRLF files, a quoted newline, the field that
# is missing or mistyped, the test type that cannot be told, and a usage error.
w("grasp/missing-response-column.csv", "scene,prompt,gt\r\nColor,q,yes\r\n")
# Row 2 starts on line 3 because row 1 has a quoted newline.
w("grasp/gt-capitalised-after-quoted-newline.csv", 'scene,prompt,video_file,gt,response\r\nColor,q,v,yes,"Yes\r\nsure"\r\nColor,q,v,Yes,No\r\n')
w("grasp/open-scene-without-open-question.csv", H + "Color,q,v,red,red\nMovement,q,v,moving,moving\n")
w("grasp/response-wrong-type.jsonl", '{"scene":"Color","gt":"yes","response":"yes"}\n{"scene":"Color","gt":"yes","response":1}\n')
w("grasp/response-missing.jsonl", '{"scene":"Color","gt":"yes"}\n')
w("grasp/header-only-crlf.csv", "scene,prompt,video_file,gt,response\r\n")
# No --test and no test_config.yaml beside the file (none in this folder).
w("grasp/no-test-type.csv", H + "Color,q,v,yes,Yes\n")
w("grasp/unknown-test/results.csv", H + "Color,q,v,yes,Yes\n")
w("grasp/unknown-test/test_config.yaml", "test_name: level3\nmode: standard\n")
w("grasp/pairwise-on-level1.csv", H + "Color,q,v,yes,Yes\n")

Q = os.path.join(shared, "muse/MuSE_Benchmark/queries.json")
good = '{"idx": 0, "tasks": [{"id": "asr", "task": "automatic-speech-recognition", "dep": []}]}\n'
w("muse/plans-empty.jsonl", "")
w("muse/plans-truncated.jsonl", good + '{"idx": 1, "tasks": [{"id": "a", "task": "text-gen\n')
w("muse/plans-unknown-idx.jsonl", good + '{"idx": 9999, "tasks": []}\n')
w("muse/plans-duplicate-idx.jsonl", good + good)
w("muse/plans-idx-string.jsonl", '{"idx": "zero", "tasks": []}\n')
w("muse/plans-missing-idx.jsonl", '{"tasks": [{"id": "a", "task": "text-generation", "dep": []}]}\n')
w("muse/plans-cycle.jsonl", '{"idx": 1, "tasks": [{"id": "a", "task": "text-generation", "dep": ["b"]}, {"id": "b", "task": "abstract-summarisation", "dep": ["a"]}]}\n')
w("muse/plans-hugginggpt-cycle.jsonl", '{"idx": 1, "tasks": [{"task": "text-generation", "id": 0, "dep": [1], "args": {}}, {"task": "abstract-summarisation", "id": 1, "dep": [0], "args": {}}]}\n')
w("muse/plans-unknown-dep.jsonl", '{"idx": 1, "tasks": [{"id": "a", "task": "text-generation", "dep": ["zzz"]}]}\n')
w("muse/plans-not-object.jsonl", '[1, 2, 3]\n')
w("muse/plans-non-utf8.jsonl", good.encode() + b'{"idx": 1, "tasks": [{"id": "\xc3\x28", "task": "x", "dep": []}]}\n')
w("muse/plans-nan.jsonl", '{"idx": NaN, "tasks": []}\n')
w("muse/plans-tasks-wrong-type.jsonl", '{"idx": 1, "tasks": "text-generation"}\n')
w("muse/plans-huge-line.jsonl", '{"idx": 1, "tasks": [' + ",".join(['{"id": "a%d", "task": "text-generation", "dep": []}' % i for i in range(20000)]) + '\n')
w("muse/queries-truncated.json", '[{"idx": 0, "query": "x", "tasks": ["text-generation"]')
w("muse/queries-duplicate-idx.json", json.dumps([{"idx": 0, "query": "a", "tasks": ["text-generation"], "domains": ["text_generation"], "input_type": "text", "output_type": "text"}] * 2, indent=1))
w("muse/queries-not-array.json", '{"idx": 0}\n')
w("muse/flow-no-items.json", json.dumps({"0": {"tasks": ["automatic-speech-recognition", "translation-xx-to-yy"], "edges": [["automatic-speech-recognition", "translation-xx-to-yy"], ["translation-xx-to-yy", "automatic-speech-recognition"]]}}, indent=1))
w("muse/flow-not-object.json", "[1, 2]\n")
w("muse/aliases-unknown-task.json", '{"asr": "speech-to-everything"}\n')
w("muse/aliases-not-object.json", '["asr"]\n')
w("muse/verdicts-not-bool.jsonl", '{"idx": 0, "output_ok": "yes"}\n')
w("muse/verdicts-unknown-idx.jsonl", '{"idx": 12345, "output_ok": true}\n')
w("muse/verdicts-duplicate.jsonl", '{"idx": 0, "output_ok": true}\n{"idx": 0, "output_ok": false}\n')

src = os.path.join(shared, "mint/results/data/outputs/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl")
lines = open(src).read().splitlines()[:3]
l0 = json.loads(lines[0])
def var(f):
    v = json.loads(lines[1]); f(v); return json.dumps(v)
w("mint/truncated.jsonl", lines[0] + "\n" + lines[1][:len(lines[1]) // 2] + "\n")
w("mint/success-not-bool.jsonl", lines[0] + "\n" + var(lambda v: v["state"].__setitem__("success", "no")) + "\n")
w("mint/task-id-null.jsonl", lines[0] + "\n" + var(lambda v: v["task"].__setitem__("task_id", None)) + "\n")
w("mint/missing-state.jsonl", lines[0] + "\n" + var(lambda v: v.pop("state")) + "\n")
w("mint/history-not-array.jsonl", lines[0] + "\n" + var(lambda v: v["state"].__setitem__("history", "none")) + "\n")
w("mint/negative-invalid-actions.jsonl", lines[0] + "\n" + var(lambda v: v["state"]["agent_action_count"].__setitem__("invalid_action", -1)) + "\n")
w("mint/non-utf8.jsonl", lines[0].encode() + b"\n\xff\xfe\n")
w("mint/nan.jsonl", lines[0] + "\n" + lines[1].replace('"success": ', '"success": NaN, "x": ', 1) + "\n")
w("mint/not-an-object.jsonl", lines[0] + "\n[1, 2]\n")
w("mint/huge-line.jsonl", lines[0] + "\n" + '{"state": {"history": [' + ",".join(['{"role": "user", "content": "%s"}' % ("x" * 50)] * 20000) + "\n")
w("mint/role-wrong-type.jsonl", lines[0] + "\n" + var(lambda v: v["state"]["history"][0].__setitem__("role", 3)) + "\n")
w("mint/reference-wrong-type.jsonl", lines[0] + "\n" + var(lambda v: v["task"].__setitem__("reference", {"a": 1})) + "\n")

ds = open(os.path.join(shared, "possible-stories/dev.jsonl")).read().splitlines()[:2]
qid = json.loads(ds[0])["question_id"]
w("story/generations-truncated.jsonl", '{"question_id": "%s", "ending": "The end."}\n{"question_id": "%s", "end\n' % (qid, qid))
w("story/generations-id-number.jsonl", '{"question_id": 5, "ending": "The end."}\n')
w("story/generations-ending-null.jsonl", '{"question_id": "%s", "ending": null}\n' % qid)
w("story/generations-empty.jsonl", "\n\n")
w("story/generations-ending-misspelled.jsonl", '{"question_id": "%s", "endng": "The end."}\n' % qid)
w("story/dataset-gold-out-of-range.jsonl", ds[0] + "\n" + ds[1].replace('"gold_label": ', '"gold_label": 7, "x": ', 1) + "\n")

w("mint/stray-only.txt", "a results folder with no results.jsonl in it\n")
w("embed/missing-text.jsonl", '{"id": "a", "text": "fine"}\n{"id": "b"}\n')
w("embed/id-wrong-type.jsonl", '{"id": true, "text": "fine"}\n')
w("embed/non-utf8.txt", b"a sentence\n\xff\n")

# Human label files of the judge's calibration (story --calibration-labels), against the dev split;
# story-labels/generations.jsonl is a valid generations file the cases score beside them.
q0, q1 = (json.loads(l)["question_id"] for l in ds)
lab = lambda qid, follows, ending="An ending.": json.dumps({"question_id": qid, "ending": ending, "follows": follows}) + "\n"
w("story-labels/generations.jsonl", '{"question_id": "%s", "ending": "The end.", "model": "m"}\n' % q0)
w("story-labels/unknown-question.jsonl", lab(q0, True) + lab("no-such-question", False))
w("story-labels/follows-null.jsonl", lab(q0, None) + lab(q1, False))
w("story-labels/follows-string.jsonl", lab(q0, True) + lab(q1, "no"))
w("story-labels/ending-missing.jsonl", lab(q0, True) + json.dumps({"question_id": q1, "follows": False}) + "\n")
w("story-labels/ending-empty.jsonl", lab(q0, True) + lab(q1, False, "  "))
w("story-labels/truncated.jsonl", lab(q0, True) + '{"question_id": "%s", "ending": "An' % q1)
# Labels naming a model are checked against the run's generations (the PPI sample of that model).
def mlab(q, follows, ending="The end.", model="m", labeller=None):
    d = {"question_id": q, "ending": ending, "follows": follows, "model": model}
    if labeller is not None:
        d["labeller"] = labeller
    return json.dumps(d) + "\n"
w("story-labels/model-unknown.jsonl", mlab(q0, True) + mlab(q0, True, model="nobody"))
w("story-labels/ending-not-the-models.jsonl", mlab(q0, True) + mlab(q0, True, "Another ending.", labeller="ann"))
w("story-labels/model-without-that-question.jsonl", mlab(q0, True) + mlab(q1, True))
w("story-labels/labeller-contradicts-self.jsonl", mlab(q0, True, labeller="ann") + mlab(q0, False, labeller="ann"))
w("story-labels/not-an-object.jsonl", lab(q0, True) + '["%s", "An ending.", false]\n' % q1)
# Labels carrying `sample` (a labelling page's export) are of the run's own sample only
# (docs/story.md): one sample per file, a sha256, and the run's --label-sample / --seed.
def slab(q, follows, sample, ending="The end."):
    d = {"question_id": q, "ending": ending, "follows": follows, "labeller": "ann"}
    if sample is not None:
        d["sample"] = sample
    return json.dumps(d) + "\n"
other = "0" * 64
w("story-labels/sample-of-another-run.jsonl", slab(q0, True, other) + slab(q1, False, other, "An ending."))
w("story-labels/sample-without-label-sample.jsonl", slab(q0, True, other))
w("story-labels/sample-mixed.jsonl", slab(q0, True, other) + slab(q1, False, None, "An ending."))
w("story-labels/sample-not-sha256.jsonl", slab(q0, True, "abc"))
# scorekit label: the lines of a labelling page.
page = lambda **d: json.dumps(dict({"question_id": q0, "ending": "The end.", "follows": None}, **d)) + "\n"
w("label/missing-passage.jsonl", page(passage="P", question="Q") + page(question="Q"))
w("label/follows-string.jsonl", page(passage="P", question="Q", follows="yes"))
w("label/empty.jsonl", "\n")
