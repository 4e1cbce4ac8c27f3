//! The renders of tests/data/chat_templates/cases.json (transformers' own, written by
//! scripts/reference/chat_templates.py) byte for byte, the errors where transformers errs, and the
//! judge's prompt built on them.

use super::*;
use serde_json::Value as Json;
use std::time::{Duration, UNIX_EPOCH};

/// tests/data/chat_templates.
fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/chat_templates")
}

/// cases.json, parsed.
fn cases() -> Json {
    let text = std::fs::read_to_string(data().join("cases.json")).expect("cases.json");
    serde_json::from_str(&text).expect("cases.json is JSON")
}

/// A case's messages as the API takes them.
fn messages(case: &Json) -> Vec<Message> {
    case["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let content = m["content"].as_str().expect("content");
            match m["role"].as_str().expect("role") {
                "system" => Message::system(content),
                "user" => Message::user(content),
                "assistant" => Message::assistant(content),
                other => panic!("role {other}"),
            }
        })
        .collect()
}

/// The message of a failed render, as the user sees it.
fn message_of(e: &Error) -> String {
    assert_eq!(e.exit_code(), 2, "bad input exits 2: {e}");
    e.to_string()
}

#[test]
fn every_fixture_renders_byte_for_byte_as_transformers() {
    let all = cases();
    let now = UNIX_EPOCH + Duration::from_secs(all["now_epoch_seconds"].as_u64().unwrap());
    let folders = all["folders"].as_array().unwrap();
    let models = folders
        .iter()
        .filter(|f| f["folder"].as_str().unwrap().starts_with("models/"))
        .count();
    assert!(models >= 6, "the real templates are there ({models})");
    let (mut rendered, mut raised) = (0, 0);
    for folder in folders {
        let name = folder["folder"].as_str().unwrap();
        let dir = data().join(name);
        if let Some(err) = folder.get("load_error") {
            panic!("{name}: transformers could not load it: {err}");
        }
        let loaded = ChatTemplate::from_model_dir(&dir);
        if !folder["has_template"].as_bool().unwrap() {
            assert!(
                matches!(loaded, Ok(None)),
                "{name}: no template, as transformers"
            );
            continue;
        }
        // A template transformers cannot choose or compile fails every render there; here it
        // fails to load, naming the file.
        let case_errors: Vec<&Json> = folder["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c.get("error"))
            .collect();
        let fails_always = case_errors.len() == folder["cases"].as_array().unwrap().len()
            && case_errors
                .iter()
                .all(|e| e["type"] == "ValueError" || e["type"] == "TemplateSyntaxError");
        if fails_always {
            let e = loaded.expect_err(name);
            let msg = message_of(&e);
            assert!(msg.contains("chat_template"), "{name}: {msg}");
            raised += 1;
            continue;
        }
        let template = loaded
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: a template"));
        // The special tokens the template sees are transformers' special_tokens_map.
        let mut tokens = serde_json::Map::new();
        for (n, t) in &template.special_tokens().tokens {
            tokens.insert(n.to_string(), Json::from(t.as_str()));
        }
        if !template.special_tokens().additional.is_empty() {
            tokens.insert(
                "additional_special_tokens".into(),
                Json::from(template.special_tokens().additional.clone()),
            );
        }
        let want: serde_json::Map<String, Json> =
            folder["special_tokens_map"].as_object().unwrap().clone();
        assert_eq!(tokens, want, "{name}: special tokens");
        for case in folder["cases"].as_array().unwrap() {
            let label = format!("{name} / {}", case["name"].as_str().unwrap());
            let agp = case["add_generation_prompt"].as_bool().unwrap();
            let got = template.render_at(&messages(case), agp, now);
            match (case.get("expected"), case.get("error")) {
                (Some(want), _) => {
                    let got = got.unwrap_or_else(|e| panic!("{label}: {e}"));
                    assert_eq!(got, want.as_str().unwrap(), "{label}");
                    rendered += 1;
                }
                (None, Some(err)) => {
                    let msg = message_of(&got.expect_err(&label));
                    assert!(
                        msg.starts_with(&template.origin().display().to_string()),
                        "{label}: names the file: {msg}"
                    );
                    // The template's own message, where it raised one.
                    if err["type"] == "TemplateError" {
                        let want = format!(
                            "the chat template raised an exception: {}",
                            err["message"].as_str().unwrap()
                        );
                        assert!(msg.ends_with(&want), "{label}: {msg}");
                    }
                    raised += 1;
                }
                _ => panic!("{label}: neither expected nor error"),
            }
        }
    }
    assert!(rendered >= 80, "{rendered} renders compared");
    assert!(raised >= 10, "{raised} errors compared");
}

#[test]
fn a_template_that_raises_names_the_file_and_its_message() {
    let dir = data().join("formats/raises");
    let t = ChatTemplate::from_model_dir(&dir).unwrap().unwrap();
    let e = t
        .render(&judge_messages("Q", Some("be brief")), true)
        .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the chat template raised an exception: System role not supported",
            dir.join("tokenizer_config.json").display()
        )
    );
    // Without the system message the same template renders.
    assert_eq!(t.render(&judge_messages("Q", None), true).unwrap(), "Q");
}

#[test]
fn a_malformed_template_names_the_file_and_line() {
    let dir = data().join("formats/malformed");
    let e = ChatTemplate::from_model_dir(&dir).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let msg = e.to_string();
    let file = dir.join("chat_template.jinja").display().to_string();
    assert!(
        msg.starts_with(&format!(
            "{file}: the chat template cannot be rendered: syntax error"
        )),
        "{msg}"
    );
    assert!(msg.contains("(line 3 of the template)"), "{msg}");
}

#[test]
fn bad_config_fields_are_input_errors_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("tokenizer_config.json");
    let cases = [
        (
            r#"{"chat_template": 3}"#,
            "field \"chat_template\": expected a string or a list",
        ),
        (
            r#"{"chat_template": [{"name": "default"}]}"#,
            "field \"chat_template[0]\": each named template needs",
        ),
        (
            r#"{"bos_token": 1, "chat_template": "x"}"#,
            "field \"bos_token\": expected a string or an AddedToken",
        ),
        (
            r#"{"chat_template": "x""#,
            "tokenizer_config.json:1: not valid JSON",
        ),
        (r#"[1]"#, "expected a JSON object, found a list"),
    ];
    for (text, want) in cases {
        std::fs::write(&cfg, text).unwrap();
        let e = ChatTemplate::from_model_dir(tmp.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
}

#[test]
fn named_jinja_templates_use_the_default_one_or_refuse() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("chat_templates");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("tool_use.jinja"), "TOOLS").unwrap();
    let e = ChatTemplate::from_model_dir(tmp.path()).unwrap_err();
    assert!(
        e.to_string()
            .contains("none named \"default\" (found: tool_use)"),
        "{e}"
    );
    std::fs::write(folder.join("default.jinja"), "{{ messages[0].content }}!").unwrap();
    let t = ChatTemplate::from_model_dir(tmp.path()).unwrap().unwrap();
    assert_eq!(t.render(&[Message::user("hi")], true).unwrap(), "hi!");
    assert_eq!(t.origin(), folder.join("default.jinja"));
}

#[test]
fn the_judge_prompt_is_the_rendered_chat_or_the_plain_prompt() {
    let prompt = "Passage: P.\nQuestion: Q?\nOptions: (A) a (B) b\nAnswer:";
    // Qwen 2.5: ChatML with its default system message; rendered, so no special tokens added.
    let qwen = ChatTemplate::from_model_dir(&data().join("models/qwen2.5-7b-instruct"))
        .unwrap()
        .unwrap();
    let p = judge_prompt(Some(&qwen), prompt, None).unwrap();
    assert_eq!(
        p.text,
        format!(
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful \
             assistant.<|im_end|>\n<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
        )
    );
    assert!(!p.add_special_tokens);
    let p = judge_prompt(Some(&qwen), prompt, Some("Answer with a letter.")).unwrap();
    assert!(p
        .text
        .starts_with("<|im_start|>system\nAnswer with a letter.<|im_end|>\n<|im_start|>user\n"));
    // No template: the plain prompt, tokenized with the tokenizer's special tokens.
    let none = ChatTemplate::from_model_dir(&data().join("formats/no_template")).unwrap();
    assert!(none.is_none());
    let p = judge_prompt(None, prompt, None).unwrap();
    assert_eq!((p.text.as_str(), p.add_special_tokens), (prompt, true));
    let e = judge_prompt(None, prompt, Some("sys")).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("needs the model's chat template"),
        "{e}"
    );
}

#[test]
fn a_folder_without_config_or_template_has_no_template() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(ChatTemplate::from_model_dir(tmp.path()).unwrap().is_none());
}

#[test]
fn generation_blocks_become_plain_ifs_with_their_whitespace_control() {
    assert_eq!(
        with_generation_blocks("a{%- generation -%}b{% endgeneration +%}{% if x %}{{ '{%' }}"),
        "a{%- if true -%}b{% endif +%}{% if x %}{{ '{%' }}"
    );
}

#[test]
fn a_template_is_shared_across_threads() {
    // The judge renders prompts from rayon's workers with one compiled template.
    fn shared<T: Send + Sync>() {}
    shared::<ChatTemplate>();
    let t = ChatTemplate::from_model_dir(&data().join("models/phi-3.5-mini-instruct"))
        .unwrap()
        .unwrap();
    let texts: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let t = &t;
                s.spawn(move || t.render(&[Message::user(format!("q{i}"))], true).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(texts[3], "<|user|>\nq3<|end|>\n<|assistant|>\n");
}
