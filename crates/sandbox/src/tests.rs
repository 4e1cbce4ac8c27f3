//! Each layer checked from inside a program (python3 reports what it sees on stdout).

use super::*;

fn python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-I", "-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn run_py(code: &str, limits: &Limits) -> RunResult {
    let exe = python();
    let prog = Program {
        executable: &exe,
        args: vec![Arg::Text("-I"), Arg::File("p.py")],
        files: vec![("p.py", code.as_bytes())],
    };
    run(&prog, limits).unwrap()
}

fn small() -> Limits {
    Limits {
        timeout: Duration::from_secs(5),
        memory_bytes: 256 << 20,
        file_bytes: 1 << 20,
        open_files: 64,
        processes: 16,
        output_bytes: 1000,
    }
}

fn stdout(r: &RunResult) -> String {
    String::from_utf8_lossy(&r.stdout.kept).into_owned()
}

#[test]
fn environment_is_clean_and_limits_are_set() {
    std::env::set_var("SCOREKIT_SANDBOX_TEST_SECRET", "x");
    let code = r#"
import os, resource
print(sorted(os.environ))
print(os.getcwd() == os.environ["HOME"] == os.environ["TMPDIR"])
for r in ["RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE"]:
    print(r, resource.getrlimit(getattr(resource, r)))
"#;
    let r = run_py(code, &small());
    assert_eq!(r.ending, Ending::Exited(0), "{r:?}");
    let lines: Vec<String> = stdout(&r).lines().map(String::from).collect();
    assert_eq!(
        lines[0],
        "['HOME', 'LANG', 'PATH', 'SCOREKIT_SANDBOX', 'TMPDIR']"
    );
    assert_eq!(lines[1], "True");
    assert_eq!(lines[2], format!("RLIMIT_AS ({0}, {0})", 256 << 20));
    assert_eq!(lines[3], "RLIMIT_CPU (6, 7)");
    assert_eq!(lines[4], format!("RLIMIT_FSIZE ({0}, {0})", 1 << 20));
    assert_eq!(lines[5], "RLIMIT_NOFILE (64, 64)");
    assert!(lines[6].starts_with("RLIMIT_NPROC ("), "{}", lines[6]);
    assert_eq!(lines[7], "RLIMIT_CORE (0, 0)");
    assert_eq!(r.leftovers, 0);
}

#[test]
fn working_folder_is_removed_even_when_locked() {
    let code = r#"
import os
print(os.getcwd())
os.makedirs("a/b")
open("a/b/f", "w").write("x")
os.chmod("a/b", 0)
os.chmod("a", 0)
"#;
    let r = run_py(code, &small());
    assert_eq!(r.ending, Ending::Exited(0), "{r:?}");
    let dir = stdout(&r).trim().to_string();
    assert!(dir.contains("scorekit-exec-"), "{dir}");
    assert!(!Path::new(&dir).exists(), "{dir} left behind");
}

#[test]
fn detached_children_die_with_the_program() {
    // A grandchild in its own session, ignoring SIGTERM and SIGHUP, sleeping on.
    let code = r#"
import os, posix, signal, time
if posix.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if posix.fork() == 0:
        time.sleep(100)
    posix._exit(0)
time.sleep(0.3)
"#;
    let r = run_py(code, &small());
    assert_eq!(r.ending, Ending::Exited(0), "{r:?}");
    let iso = isolation();
    if iso.pid_namespace || iso.cgroups.any() {
        assert_eq!(r.leftovers, 0, "{iso:?}");
    } else {
        // Only the environment marker found it; it was killed then.
        assert_eq!(r.leftovers, 1, "{iso:?}");
    }
}

#[test]
fn timeout_kills_the_whole_tree() {
    let code = r#"
import posix, time
for _ in range(3):
    posix.fork()
time.sleep(100)
"#;
    let limits = Limits {
        timeout: Duration::from_millis(500),
        ..small()
    };
    let r = run_py(code, &limits);
    assert_eq!(r.ending, Ending::TimedOut);
    assert_eq!(r.leftovers, 0);
}

#[test]
fn output_is_drained_and_capped() {
    let code = "import os\nfor _ in range(2000): os.write(1, b'x' * 4096)\nos.write(2, b'err')";
    let r = run_py(code, &small());
    assert_eq!(r.ending, Ending::Exited(0), "{r:?}");
    assert_eq!(r.stdout.total, 2000 * 4096);
    assert_eq!(r.stdout.kept.len(), 1000);
    assert_eq!(r.stderr.kept, b"err");
}

#[test]
fn file_size_and_memory_limits_stop_the_program() {
    let big = "open('f', 'wb').write(b'x' * (2 << 20))";
    assert_eq!(run_py(big, &small()).ending, Ending::Exited(1));
    let hog = "x = bytearray(512 << 20)";
    assert_eq!(run_py(hog, &small()).ending, Ending::Exited(1));
}

#[test]
fn process_count_is_limited_where_a_limit_is_available() {
    let iso = isolation();
    if iso.process_limit.is_none() {
        eprintln!("no process-count limit here: {iso:?}");
        return;
    }
    // At most 40 forks (children sleep): only 16 processes may exist.
    let code = r#"
import posix, time
n = 0
for _ in range(40):
    try:
        if posix.fork() == 0:
            time.sleep(100)
        n += 1
    except OSError:
        break
print(n)
"#;
    let r = run_py(code, &small());
    assert_eq!(r.ending, Ending::Exited(0), "{r:?}");
    let n: u32 = stdout(&r).trim().parse().unwrap();
    assert!(n < 16, "{n} children started");
    assert_eq!(r.leftovers, 0);
}

#[test]
fn writes_outside_the_folder_and_network_are_refused() {
    let iso = isolation();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = std::env::temp_dir().join(format!("scorekit-outside-{}", std::process::id()));
    let code = format!(
        r#"
import socket
try:
    open({outside:?}, "w").write("x")
    print("wrote")
except OSError as e:
    print("write refused")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=1)
    print("connected")
except OSError as e:
    print("connect refused")
"#,
        outside = outside.display().to_string(),
    );
    let r = run_py(&code, &small());
    let out = stdout(&r);
    let _ = std::fs::remove_file(&outside);
    if iso.landlock_filesystem {
        assert!(out.contains("write refused"), "{out}");
    }
    if iso.network_namespace || iso.landlock_tcp {
        assert!(out.contains("connect refused"), "{out}");
        assert!(listener.accept().is_err());
    }
}
