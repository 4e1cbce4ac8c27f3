//! `scorekit data` and dataset names in the scoring commands, on the real benchmark files (the
//! test data cache, data/test-parts.txt) served in their upstream layout by a loopback server
//! through SCOREKIT_DATA_ENDPOINT, or read from a local copy with --from: pull, checksum refusal,
//! interrupted transfers, offline errors, bad names, bad mirrors and bad manifests.

use crate::common;

use common::http::{Reply, Server};
use common::{read_json, repo, scorekit, stderr, stdout, test_data};
use scorekit::data::{manifest, testdata};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Where the test data cache keeps an upstream file (None: not a file of the parts it holds).
/// The first call checks that every part of data/test-parts.txt is there, so a missing one
/// fails with the pull that fetches it rather than as a 404 of the mirror.
fn cached(repo: &str, path: &str) -> Option<PathBuf> {
    static DIRS: OnceLock<Vec<(String, PathBuf)>> = OnceLock::new();
    let dirs = DIRS.get_or_init(|| {
        for spec in testdata::parts() {
            test_data(spec, "");
        }
        manifest::all()
            .unwrap()
            .into_iter()
            .map(|m| (m.repo.clone(), testdata::commit_dir(&m.name)))
            .collect()
    });
    let (_, dir) = dirs.iter().find(|(r, _)| r == repo)?;
    let p = dir.join(path);
    p.is_file().then_some(p)
}

fn commit(name: &str) -> String {
    manifest::find(name).unwrap().unwrap().commit
}

/// What the mirror does to one upstream path.
#[derive(Clone, Default)]
struct Faults {
    /// Flip a byte of this file.
    corrupt: Option<String>,
    /// Cut the first transfer of this file halfway.
    cut_once: Option<String>,
    /// Serve the dev split where the train split is asked for (the copy has no train split).
    fake_train: bool,
}

/// Serve the test data cache as raw.githubusercontent.com does: `/{owner}/{repo}/{commit}/{path}`.
fn mirror(faults: Faults) -> Server {
    let mut cut_done = false;
    common::http::serve(move |req, _| {
        let parts: Vec<&str> = req.path.trim_start_matches('/').splitn(4, '/').collect();
        let [owner, name, _commit, path] = parts[..] else {
            return Reply::not_found();
        };
        let path = if faults.fake_train && path == "dataset/train.jsonl" {
            "dataset/dev.jsonl"
        } else {
            path
        };
        let Some(local) = cached(&format!("{owner}/{name}"), path) else {
            return Reply::not_found();
        };
        let mut body = std::fs::read(local).unwrap();
        if faults.corrupt.as_deref() == Some(path) {
            body[10] ^= 0x20;
        }
        let mut r = Reply::ok(body);
        if faults.cut_once.as_deref() == Some(path) && !cut_done {
            cut_done = true;
            r.cut = Some(r.body.len() / 2);
        }
        r
    })
}

/// scorekit with its own cache and a mirror, nothing inherited that would change the outcome.
fn sk(cache: &Path, endpoint: &str) -> Command {
    let mut c = scorekit();
    c.env("SCOREKIT_DATA", cache)
        .env("SCOREKIT_DATA_ENDPOINT", endpoint)
        .env_remove("HF_HUB_OFFLINE")
        .env_remove("SCOREKIT_DATA_MANIFESTS");
    c
}

fn out(c: &mut Command, args: &[&str]) -> Output {
    c.args(args).output().expect("scorekit runs")
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}\n{}", stderr(o), stdout(o));
}

fn exit2(o: &Output, needles: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    for n in needles {
        assert!(stderr(o).contains(n), "{n:?} not in: {}", stderr(o));
    }
}

/// Files in the cache's temporary folders (a transfer left behind).
fn leftovers(cache: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(cache)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_type().is_file() && e.path().to_string_lossy().contains("/.scorekit/tmp/")
        })
        .map(|e| e.path().to_path_buf())
        .collect()
}

#[test]
fn pulls_from_a_mirror_then_scores_offline_with_the_pin_in_metrics() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let server = mirror(Faults::default());
    let ps = commit("possible-stories");

    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "possible-stories:test"],
    );
    ok(&o);
    let test = cache.join(format!("possible-stories/{ps}/dataset/test.jsonl"));
    assert_eq!(PathBuf::from(stdout(&o).trim()), test);
    assert_eq!(
        std::fs::read(&test).unwrap(),
        std::fs::read(test_data("possible-stories:test", "dataset/test.jsonl")).unwrap()
    );
    assert_eq!(
        server.requests(),
        [format!(
            "/nii-cl/possible-stories/{ps}/dataset/test.jsonl None"
        )]
    );
    // Pulled again: nothing is fetched.
    ok(&out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "possible-stories:test", "--quiet"],
    ));
    assert_eq!(server.requests().len(), 1);

    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "verify", "possible-stories"],
    );
    ok(&o);
    assert!(
        stdout(&o).contains(
            "ok      dataset/test.jsonl  sha256 569613d124492f3beac2ea00e3ca91188b3e1405e314ddabf50611b648e4121c"
        ),
        "{}",
        stdout(&o)
    );
    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "path", "possible-stories:test"],
    );
    ok(&o);
    assert_eq!(stdout(&o).trim(), test.display().to_string());
    let o = out(&mut sk(&cache, &server.base()), &["data", "list"]);
    ok(&o);
    assert!(
        stdout(&o).contains("possible-stories:test"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("CC BY 4.0"), "{}", stdout(&o));

    // `muse --queries muse` pulls the queries on first use, then metrics.json names the pin.
    let res = t.path().join("muse");
    let o = out(
        &mut sk(&cache, &server.base()),
        &[
            "muse",
            "--queries",
            "muse",
            "--plans",
            repo()
                .join("tests/data/muse/hugginggpt.jsonl")
                .to_str()
                .unwrap(),
            "--out",
            res.to_str().unwrap(),
            "--quiet",
        ],
    );
    ok(&o);
    let m = read_json(&res.join("metrics.json"));
    let d = &m["datasets"][0];
    assert_eq!(d["name"], "muse:queries");
    assert_eq!(d["repo"], "dgraux/Hive-ICLR-2025");
    assert_eq!(d["commit"], commit("muse"));
    let queries_sha =
        scorekit::report::sha256_file(&test_data("muse:queries", "MuSE_Benchmark/queries.json"))
            .unwrap();
    let files = d["files"].as_array().unwrap();
    let q = files
        .iter()
        .find(|f| f["path"] == "MuSE_Benchmark/queries.json")
        .unwrap();
    assert_eq!(q["sha256"], queries_sha.as_str());
    assert_eq!(files.len(), 2, "queries.json and the dataset card");
    assert_eq!(m["inputs"][0]["sha256"], queries_sha.as_str());
    // The same scores as from the file itself.
    let direct = t.path().join("muse-direct");
    ok(&out(
        &mut sk(&cache, &server.base()),
        &[
            "muse",
            "--queries",
            test_data("muse:queries", "MuSE_Benchmark/queries.json")
                .to_str()
                .unwrap(),
            "--plans",
            repo()
                .join("tests/data/muse/hugginggpt.jsonl")
                .to_str()
                .unwrap(),
            "--out",
            direct.to_str().unwrap(),
            "--quiet",
        ],
    ));
    let dm = read_json(&direct.join("metrics.json"));
    assert_eq!(m["metrics"], dm["metrics"]);
    assert!(dm.get("datasets").is_none());

    // Offline (HF_HUB_OFFLINE=1, dead endpoint): the cached split scores, a missing one is
    // named with the command that fetches it, and the network is not touched.
    let before = server.requests().len();
    let story = |dataset: &str, dir: &str| {
        let mut c = sk(&cache, &server.base());
        c.env("HF_HUB_OFFLINE", "1").args([
            "story",
            "--dataset",
            dataset,
            "--generations",
            repo()
                .join("data/story/test-demo-generations.jsonl")
                .to_str()
                .unwrap(),
            "--skip-embedder",
            "--judge",
            t.path().join("no-judge").to_str().unwrap(),
            "--out",
            t.path().join(dir).to_str().unwrap(),
            "--quiet",
        ]);
        c.output().unwrap()
    };
    let o = story("possible-stories:dev", "story-dev");
    exit2(
        &o,
        &[
            "HF_HUB_OFFLINE",
            "dataset/dev.jsonl",
            "scorekit data pull possible-stories:dev",
        ],
    );
    // The cached test split resolves offline; what stops this run is the next thing it needs
    // (the flags resolve the calibration's endings file before any model: not cached here).
    let o = story("possible-stories:test", "story-test");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!stderr(&o).contains("dataset/test.jsonl"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("possible-stories:endings") && stderr(&o).contains("--no-calibration"),
        "{}",
        stderr(&o)
    );
    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "possible-stories:dev", "--offline"],
    );
    exit2(
        &o,
        &[
            "dataset/dev.jsonl",
            "scorekit data pull possible-stories:dev",
        ],
    );
    assert_eq!(
        server.requests().len(),
        before,
        "offline touched the network"
    );
}

#[test]
fn a_checksum_mismatch_is_refused_and_nothing_is_kept() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let server = mirror(Faults {
        corrupt: Some("dataset/test.jsonl".into()),
        ..Faults::default()
    });
    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "possible-stories:test"],
    );
    exit2(
        &o,
        &[
            "refused",
            "sha256",
            "dataset/test.jsonl",
            "nothing was written",
        ],
    );
    let dir = cache.join(format!("possible-stories/{}", commit("possible-stories")));
    assert!(!dir.join("dataset/test.jsonl").exists());
    assert_eq!(leftovers(&cache), Vec::<PathBuf>::new());

    // The train split is pinned by its git blob id alone: other bytes are refused by that id.
    let server = mirror(Faults {
        fake_train: true,
        ..Faults::default()
    });
    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "possible-stories:train"],
    );
    exit2(
        &o,
        &[
            "refused",
            "dataset/train.jsonl",
            "git blob id: got 4b9414bcb00366d761b90de50ae233e3c35e3ecf, the manifest pins 08f4fd626a812043ea684f9ec455c81ed8ba0b17",
        ],
    );
    assert!(!dir.join("dataset/train.jsonl").exists());
    assert_eq!(leftovers(&cache), Vec::<PathBuf>::new());
    // Without the corruption the test split comes through.
    ok(&out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "possible-stories:test", "--quiet"],
    ));
}

/// A manifest pinning a real file by git blob id only (as the train split is pinned).
fn blob_manifest(dir: &Path) {
    let ps = commit("possible-stories");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("ps-blob.toml"),
        format!(
            r#"name = "ps-blob"
repo = "nii-cl/possible-stories"
commit = "{ps}"
licence = "as possible-stories"
default = "test"
files = [
  {{ path = "dataset/test.jsonl", git_blob = "eba08dab3538688e4a9bb424f43511147f433b75" }},
]
[[parts]]
name = "test"
path = "dataset/test.jsonl"
include = ["dataset/test.jsonl"]
"#
        ),
    )
    .unwrap();
}

#[test]
fn files_pinned_by_git_blob_are_checked_by_it_and_their_sha256_recorded() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let manifests = t.path().join("manifests");
    blob_manifest(&manifests);
    let server = mirror(Faults::default());
    let with = |c: &mut Command| {
        c.env("SCOREKIT_DATA_MANIFESTS", &manifests);
    };
    let mut c = sk(&cache, &server.base());
    with(&mut c);
    let o = out(&mut c, &["data", "pull", "ps-blob"]);
    ok(&o);
    let sha = "569613d124492f3beac2ea00e3ca91188b3e1405e314ddabf50611b648e4121c";
    assert!(
        stderr(&o).contains("git blob eba08dab3538688e4a9bb424f43511147f433b75 verified")
            && stderr(&o).contains(&format!("sha256 {sha} recorded")),
        "{}",
        stderr(&o)
    );
    let dir = cache.join(format!("ps-blob/{}", commit("possible-stories")));
    assert_eq!(
        std::fs::read_to_string(dir.join(".scorekit/SHA256SUMS")).unwrap(),
        format!("{sha}  dataset/test.jsonl\n")
    );
    let mut c = sk(&cache, &server.base());
    with(&mut c);
    let o = out(&mut c, &["data", "verify", "ps-blob"]);
    ok(&o);
    assert!(stdout(&o).contains("git blob eba08dab"), "{}", stdout(&o));

    // A cached file changed afterwards (same size) is caught by verify and named.
    let f = dir.join("dataset/test.jsonl");
    let mut b = std::fs::read(&f).unwrap();
    b[100] ^= 0x01;
    std::fs::write(&f, &b).unwrap();
    let mut c = sk(&cache, &server.base());
    with(&mut c);
    let o = out(&mut c, &["data", "verify", "ps-blob"]);
    exit2(&o, &["dataset/test.jsonl", "git blob id", "1 of 1"]);
    assert!(
        stdout(&o).contains("BAD     dataset/test.jsonl"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_interrupted_pull_keeps_nothing_half_written_and_the_next_one_finishes() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let cut = "PDDL-domain-files/machine_translation-domain.pddl";
    let server = mirror(Faults {
        cut_once: Some(cut.into()),
        ..Faults::default()
    });
    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "muse:domains"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("interrupted")
            && stderr(&o).contains("scorekit data pull muse:domains"),
        "{}",
        stderr(&o)
    );
    let dir = cache.join(format!("muse/{}", commit("muse")));
    assert!(!dir.join(cut).exists(), "half a file was kept");
    assert_eq!(leftovers(&cache), Vec::<PathBuf>::new());
    // Files before the cut are in place (4 of 10, in manifest order).
    let first = server.requests().len();
    assert_eq!(first, 5, "{:?}", server.requests());
    let o = out(
        &mut sk(&cache, &server.base()),
        &["data", "pull", "muse:domains"],
    );
    ok(&o);
    // Only the 6 missing files were asked for, and every file is whole.
    assert_eq!(
        server.requests().len(),
        first + 6,
        "{:?}",
        server.requests()
    );
    for p in std::fs::read_dir(dir.join("PDDL-domain-files")).unwrap() {
        let p = p.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            std::fs::read(test_data(
                "muse:domains",
                &format!("PDDL-domain-files/{name}")
            ))
            .unwrap()
        );
    }
    ok(&out(
        &mut sk(&cache, &server.base()),
        &["data", "verify", "muse:domains"],
    ));
}

/// A folder laid out like a clone of mint-bench, made of links to the test data cache.
fn mint_clone(dir: &Path, m: &manifest::DataManifest, part: &str) {
    for f in m.files_of(&m.part(part).unwrap()) {
        let src = cached(&m.repo, &f.path).expect("in the test data cache");
        let dst = dir.join(&f.path);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(src.canonicalize().unwrap(), dst).unwrap();
    }
}

#[test]
fn mint_part_from_a_local_copy_scores_as_the_folder_does() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let clone = t.path().join("mint-bench");
    let m = manifest::find("mint").unwrap().unwrap();
    mint_clone(&clone, &m, "headline");
    // No network at all: a dead endpoint, and --from.
    let dead = "http://127.0.0.1:9";
    let o = out(
        &mut sk(&cache, dead),
        &[
            "data",
            "pull",
            "mint:headline",
            "--from",
            clone.to_str().unwrap(),
            "--offline",
        ],
    );
    ok(&o);
    assert!(
        stdout(&o).trim().ends_with("data/outputs"),
        "{}",
        stdout(&o)
    );
    // The whole agent has 152 files upstream; offline, the first missing one is named.
    let o = out(
        &mut sk(&cache, dead),
        &[
            "mint",
            "--outputs",
            "mint:gpt-3.5-turbo-0613",
            "--offline",
            "--out",
            t.path().join("x").to_str().unwrap(),
        ],
    );
    exit2(
        &o,
        &[
            "F=CodeLlama-34b-Instruct-hf",
            "104 of its 152 files missing",
            "scorekit data pull mint:gpt-3.5-turbo-0613",
        ],
    );

    let res = t.path().join("mint");
    let o = out(
        &mut sk(&cache, dead),
        &[
            "mint",
            "--outputs",
            "mint:headline",
            "--offline",
            "--out",
            res.to_str().unwrap(),
            "--quiet",
        ],
    );
    ok(&o);
    let direct = t.path().join("mint-direct");
    ok(&out(
        &mut sk(&cache, dead),
        &[
            "mint",
            "--outputs",
            test_data("mint:headline", "data/outputs").to_str().unwrap(),
            "--out",
            direct.to_str().unwrap(),
            "--quiet",
        ],
    ));
    let a = read_json(&res.join("metrics.json"));
    let b = read_json(&direct.join("metrics.json"));
    assert_eq!(a["metrics"], b["metrics"]);
    assert_eq!(a["datasets"][0]["name"], "mint:headline");
    assert_eq!(a["datasets"][0]["commit"], m.commit);
    assert_eq!(a["datasets"][0]["files"].as_array().unwrap().len(), 56);
}

#[test]
fn bad_names_mirrors_sources_and_manifests_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let dead = "http://127.0.0.1:9";
    exit2(
        &out(
            &mut sk(&cache, dead),
            &["data", "pull", "possible-stories:nope"],
        ),
        &["no part \"nope\"", "dev, test, endings, train, all"],
    );
    exit2(
        &out(&mut sk(&cache, dead), &["data", "path", "nope"]),
        &["unknown dataset", "possible-stories, grasp, muse, mint"],
    );
    exit2(
        &out(
            &mut sk(&cache, dead),
            &[
                "story",
                "--dataset",
                "possible-stories:nope",
                "--generations",
                "g.jsonl",
                "--out",
                t.path().join("s").to_str().unwrap(),
            ],
        ),
        &["possible-stories:nope"],
    );
    // Bad mirrors: not a URL, nothing listening, a server without the files.
    exit2(
        &out(
            &mut sk(&cache, "ftp://mirror.example"),
            &["data", "pull", "grasp"],
        ),
        &[
            "SCOREKIT_DATA_ENDPOINT=ftp://mirror.example",
            "not a usable mirror",
        ],
    );
    exit2(
        &out(&mut sk(&cache, dead), &["data", "pull", "grasp"]),
        &["cannot reach the mirror"],
    );
    let empty = common::http::serve(|_, _| Reply::not_found());
    exit2(
        &out(&mut sk(&cache, &empty.base()), &["data", "pull", "grasp"]),
        &["HTTP 404", "configs/tests/level1_binary.yaml"],
    );
    assert_eq!(leftovers(&cache), Vec::<PathBuf>::new());
    // Bad local copies.
    exit2(
        &out(
            &mut sk(&cache, dead),
            &[
                "data",
                "pull",
                "grasp",
                "--from",
                t.path().join("nowhere").to_str().unwrap(),
            ],
        ),
        &["--from", "not a folder"],
    );
    exit2(
        &out(
            &mut sk(&cache, dead),
            &[
                "data",
                "pull",
                "grasp",
                "--from",
                t.path().to_str().unwrap(),
            ],
        ),
        &["configs/tests/level1_binary.yaml", "missing from --from"],
    );
    // `data path` of something not pulled names the pull command.
    exit2(
        &out(&mut sk(&cache, dead), &["data", "path", "grasp:prompts"]),
        &["not in the cache", "scorekit data pull grasp:prompts"],
    );
    // Bad manifests: the file, the line and the field.
    let manifests = t.path().join("manifests");
    blob_manifest(&manifests);
    let good = std::fs::read_to_string(manifests.join("ps-blob.toml")).unwrap();
    let with = |text: &str| {
        std::fs::write(manifests.join("ps-blob.toml"), text).unwrap();
        let mut c = sk(&cache, dead);
        c.env("SCOREKIT_DATA_MANIFESTS", &manifests);
        out(&mut c, &["data", "list"])
    };
    exit2(
        &with(&good.replace("eba08dab", "XYZ08dab")),
        &["ps-blob.toml:7", "field \"git_blob\"", "40 lowercase hex"],
    );
    exit2(
        &with(&good.replace("default = \"test\"", "default = [1]")),
        &["ps-blob.toml:5", "not a valid data manifest"],
    );
    exit2(
        &with(&good.replace(
            "path = \"dataset/test.jsonl\", git_blob",
            "path = \"/etc/passwd\", git_blob",
        )),
        &["ps-blob.toml:7", "field \"path\""],
    );
    let mut c = sk(&cache, dead);
    c.env("SCOREKIT_DATA_MANIFESTS", t.path().join("no-such-folder"));
    exit2(
        &out(&mut c, &["data", "list"]),
        &["SCOREKIT_DATA_MANIFESTS"],
    );
}

/// Where the project's copy of the data (`../shared/data`) keeps an upstream file: it drops
/// possible-stories' `dataset/` folder and keeps MINT's `data/outputs` under `results/`.
fn project_copy_path(name: &str, path: &str) -> String {
    match name {
        "possible-stories" => format!("possible-stories/{}", path.trim_start_matches("dataset/")),
        "mint" if path.starts_with("data/outputs/") => format!("mint/results/{path}"),
        _ => format!("{name}/{path}"),
    }
}

/// The main job's way here: scripts/data/shared-mirror.sh lays the project copy out as upstream
/// repositories, and every part the copy holds whole pulls from it with --from, checked. The copy
/// here is the project's layout made of links to the test data cache (the files the tests read).
#[test]
fn the_project_copy_laid_out_by_the_script_serves_every_part_it_holds() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let copy = t.path().join("shared-data");
    for m in manifest::all().unwrap() {
        for f in &m.files {
            if let Some(src) = cached(&m.repo, &f.path) {
                let dst = copy.join(project_copy_path(&m.name, &f.path));
                std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(src.canonicalize().unwrap(), dst).unwrap();
            }
        }
    }
    let layout = t.path().join("upstream");
    let o = Command::new("bash")
        .arg(repo().join("scripts/data/shared-mirror.sh"))
        .arg(&copy)
        .arg(&layout)
        .output()
        .unwrap();
    ok(&o);
    let dead = "http://127.0.0.1:9";
    let mut pulled = 0;
    for m in manifest::all().unwrap() {
        for part in m.part_names() {
            let files = m.files_of(&m.part(&part).unwrap()).len();
            let whole = m
                .files_of(&m.part(&part).unwrap())
                .iter()
                .all(|f| cached(&m.repo, &f.path).is_some());
            let spec = format!("{}:{part}", m.name);
            let from = layout.join(&m.name);
            let o = out(
                &mut sk(&cache, dead),
                &[
                    "data",
                    "pull",
                    &spec,
                    "--from",
                    from.to_str().unwrap(),
                    "--quiet",
                ],
            );
            if whole {
                ok(&o);
                pulled += files;
            } else {
                exit2(&o, &["missing from --from"]);
            }
        }
    }
    // possible-stories dev/test/endings, grasp (twice: parts and all), muse queries, domains,
    // taxonomy, mint tasks and headline.
    assert_eq!(pulled, 3 + (6 + 3 + 10) + (2 + 10 + 1) + (8 + 56));
    for name in ["possible-stories", "grasp", "muse", "mint"] {
        ok(&out(&mut sk(&cache, dead), &["data", "verify", name]));
    }
}
