//! `scorekit mint --exec-code` against a corpus of hostile programs (tests/data/mint/hostile/),
//! mixed into real HumanEval and MBPP trajectories: each hostile program ends failed or timed
//! out, the honest ones keep their stored verdicts, no process of the corpus survives, nothing
//! is written outside the temporary folders, the secret of scorekit's environment does not
//! leak, and scorekit's own memory stays bounded while a program floods its output.
//!
//! A hostile program "passes" (its tests are `assert ESCAPED`) only if its attack worked, so a
//! containment failure shows as a verdict of true.

use crate::common;

use common::{read_json, repo, scorekit, test_data};
use serde_json::Value;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

const BASE: &str = "gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation";
const SECRET: &str = "SCOREKIT_TEST_SECRET";
/// Honest trajectories of each task taken from the real ones (`mint:headline`).
const HONEST: usize = 6;

/// The corpus programs, with whether each needs a process-count limit to be safe to run.
const CORPUS: &[(&str, bool)] = &[
    ("infinite_loop", false),
    ("fork_bomb_posix", true),
    ("fork_bomb_ctypes", true),
    ("fork_bomb_multiprocessing", true),
    ("memory_bomb", false),
    ("big_file", false),
    ("stdout_flood", false),
    ("ignores_sigterm_child", false),
    ("setsid_child", false),
    ("read_environment", false),
    ("write_outside", false),
    ("network", false),
    ("deep_recursion", false),
];

/// One MINT trajectory line: a real line of `task` with its answer and tests replaced.
fn hostile_line(template: &Value, name: &str, answer: &str) -> String {
    let mut v = template.clone();
    v["task"]["task_id"] = format!("hostile/{name}").into();
    v["task"]["reference"] = "assert ESCAPED".into();
    v["state"]["success"] = false.into();
    let history = v["state"]["history"].as_array_mut().unwrap();
    let first_user = history.iter().position(|m| m["role"] == "user").unwrap();
    history.truncate(first_user + 1);
    history.push(serde_json::json!({
        "role": "assistant",
        "content": format!("<thought> done </thought>\n<solution>\n{answer}\n</solution>"),
    }));
    v.to_string()
}

/// Processes whose command line, working folder or environment names `marker`.
fn survivors(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let p = e.path();
        let state = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        if state
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'))
        {
            continue;
        }
        let cmdline = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(p.join("environ")).unwrap_or_default();
        let cwd = std::fs::read_link(p.join("cwd")).unwrap_or_default();
        let has = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker.as_bytes());
        if has(&cmdline) || has(&environ) || cwd.to_string_lossy().contains(marker) {
            found.push(format!("{name}: {}", String::from_utf8_lossy(&cmdline)));
        }
    }
    found
}

/// Peak resident memory (VmHWM, kB) of a running process.
fn peak_rss_kb(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|l| l.trim().trim_end_matches("kB").trim().parse().ok())
}

fn items_by_task_id(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn hostile_programs_are_contained_and_honest_ones_keep_their_verdicts() {
    let iso = scorekit::sandbox::isolation();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("outputs");
    let work_tmp = dir.path().join("tmp");
    let outside = dir.path().join("outside");
    for d in [&work_tmp, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();

    let corpus_dir = repo().join("tests/data/mint/hostile");
    let mut expected_hostile = Vec::new();
    for (i, task) in ["humaneval", "mbpp"].into_iter().enumerate() {
        let src = test_data(
            "mint:headline",
            &format!("data/outputs/{BASE}/{task}/results.jsonl"),
        );
        let text = std::fs::read_to_string(&src).unwrap();
        let mut lines: Vec<String> = text.lines().take(HONEST).map(String::from).collect();
        let template: Value = serde_json::from_str(&lines[0]).unwrap();
        // Half of the corpus goes into each task's file.
        for (name, needs_process_limit) in CORPUS.iter().skip(i).step_by(2) {
            if *needs_process_limit && iso.process_limit.is_none() {
                eprintln!("skipping {name}: no process-count limit here ({iso:?})");
                continue;
            }
            let program = std::fs::read_to_string(corpus_dir.join(format!("{name}.py")))
                .unwrap()
                .replace("{OUTSIDE}", outside.to_str().unwrap())
                .replace("{PORT}", &port);
            lines.push(hostile_line(&template, name, &program));
            expected_hostile.push(format!("hostile/{name}"));
        }
        let dst = root.join(BASE).join(task).join("results.jsonl");
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::write(dst, lines.join("\n") + "\n").unwrap();
    }

    // Without a cpu cgroup a fork bomb starves the programs running beside it (its processes
    // share the CPU with theirs one for one), so they run one at a time there.
    let jobs = if iso.cgroups.cpu.is_some() { "4" } else { "1" };
    let out = dir.path().join("out");
    let mut child = scorekit()
        .args(["mint", "--outputs", root.to_str().unwrap(), "--exec-code"])
        .args([
            "--exec-timeout",
            "3",
            "--exec-memory",
            "512",
            "--jobs",
            jobs,
        ])
        .args([
            "--out",
            out.to_str().unwrap(),
            "--quiet",
            "--bootstrap",
            "10",
        ])
        .env("TMPDIR", &work_tmp)
        .env(SECRET, "do-not-leak")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        stderr_pipe.read_to_string(&mut s).unwrap();
        s
    });
    let mut stdout_pipe = child.stdout.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        stdout_pipe.read_to_end(&mut v).unwrap();
        v
    });
    let mut peak_kb = 0;
    let status = loop {
        if let Some(kb) = peak_rss_kb(pid) {
            peak_kb = peak_kb.max(kb);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = err_reader.join().unwrap();
    out_reader.join().unwrap();
    assert!(status.success(), "{stderr}");

    // Verdicts: honest ones as stored, hostile ones false (failed or timed out).
    let items = items_by_task_id(&out);
    let mut seen_hostile = Vec::new();
    for it in &items {
        let id = it["task_id"].as_str().unwrap().to_string();
        if id.starts_with("hostile/") {
            assert_eq!(it["rechecked"], false, "{id} escaped: {it}");
            seen_hostile.push(id);
        } else {
            assert_eq!(it["rechecked"], it["success"], "honest {id} changed: {it}");
        }
    }
    seen_hostile.sort();
    expected_hostile.sort();
    assert_eq!(seen_hostile, expected_hostile);
    assert_eq!(items.len(), 2 * HONEST + expected_hostile.len());
    let note = |id: &str| {
        items
            .iter()
            .find(|i| i["task_id"] == id)
            .map(|i| i["recheck_note"].clone())
    };
    for timed_out in ["hostile/infinite_loop", "hostile/stdout_flood"] {
        assert_eq!(note(timed_out), Some("timed out".into()), "{timed_out}");
    }
    // The others may end either way: the fork bombs keep both cores busy until their timeout,
    // so even programs stopped by a limit (memory, file size, stack) may reach theirs first.
    // src/sandbox/tests.rs checks that the limits themselves stop them.

    // Nothing survives, nothing is left in or written outside the temporary folders.
    let marker = work_tmp.to_str().unwrap();
    let mut alive = survivors(marker);
    for _ in 0..50 {
        if alive.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        alive = survivors(marker);
    }
    assert!(alive.is_empty(), "survivors: {alive:?}");
    let left: Vec<PathBuf> = std::fs::read_dir(&work_tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
    let written: Vec<PathBuf> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(written.is_empty(), "written outside: {written:?}");
    assert!(
        listener.accept().is_err(),
        "a program connected to 127.0.0.1:{port}"
    );
    assert!(
        !stderr.contains("outlived it"),
        "a layer missed processes: {stderr}"
    );

    // The flood (gigabytes within the timeout) never reaches scorekit's memory.
    assert!(peak_kb > 0 && peak_kb < 200 * 1024, "peak RSS {peak_kb} kB");

    // What was in force is recorded.
    let m = read_json(&out.join("metrics.json"));
    let settings = &m["settings"];
    assert_eq!(settings["exec_memory_mib"], 512);
    assert_eq!(
        settings["exec_isolation"]["pid_namespace"],
        iso.pid_namespace
    );
    for gap in &iso.missing {
        assert!(
            stderr.contains(gap.as_str()),
            "{gap} not reported: {stderr}"
        );
    }
}
