//! The fast reading of one trajectory line for stored-flags runs: only the fields the tables
//! need are deserialised, strings are scanned where serde_json hands them over (borrowed from
//! the line or from its scratch buffer) and never copied, and everything else is skipped.
//!
//! It accepts and rejects exactly the lines the full record ([`super::parse_line`]) does: the
//! same fields are required with the same types, and `task.reference` (ignored here) is still
//! checked to be well-formed JSON the way `serde_json::Value` would read it, so a run with and
//! without `--recheck` stops on the same bad line.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// What the tables need from one line.
#[derive(Deserialize)]
pub(crate) struct StoredLine {
    pub state: StoredState,
    pub task: StoredTask,
}

/// `state`, reduced.
#[derive(Deserialize)]
pub(crate) struct StoredState {
    pub history: History,
    pub success: bool,
    pub agent_action_count: Counts,
    #[serde(default)]
    pub terminate_reason: Option<String>,
}

/// `state.agent_action_count`.
#[derive(Deserialize)]
pub(crate) struct Counts {
    pub invalid_action: u64,
}

/// `task`, reduced: the id, and the other fields the full record reads, checked but not kept.
#[derive(Deserialize)]
pub(crate) struct StoredTask {
    pub task_id: TaskId,
    #[serde(default)]
    #[allow(dead_code)] // read only to reject what the full record rejects
    prompt: Option<AnyStr>,
    #[serde(default)]
    #[allow(dead_code)]
    reference: AnyJson,
}

/// `task.task_id`: strings as they are, numbers in JSON form, anything else by its type name
/// (an error for the caller to report with file and line).
pub(crate) enum TaskId {
    Id(String),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TaskId;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, s: &str) -> Result<TaskId, E> {
                Ok(TaskId::Id(s.to_string()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<TaskId, E> {
                Ok(TaskId::Id(n.to_string()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<TaskId, E> {
                Ok(TaskId::Id(n.to_string()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<TaskId, E> {
                // serde_json::Value's own rendering of the number (e.g. `7.0`).
                match serde_json::Number::from_f64(x) {
                    Some(n) => Ok(TaskId::Id(n.to_string())),
                    None => Err(E::custom("non-finite number")),
                }
            }
            fn visit_bool<E>(self, _: bool) -> Result<TaskId, E> {
                Ok(TaskId::Other("a boolean"))
            }
            fn visit_unit<E>(self) -> Result<TaskId, E> {
                Ok(TaskId::Other("null"))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TaskId, A::Error> {
                AnyJsonVisitor.visit_seq(seq)?;
                Ok(TaskId::Other("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TaskId, A::Error> {
                AnyJsonVisitor.visit_map(map)?;
                Ok(TaskId::Other("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, checked and dropped.
struct AnyStr;

impl<'de> Deserialize<'de> for AnyStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AnyStr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<AnyStr, E> {
                Ok(AnyStr)
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, read as fully as `serde_json::Value` reads it (numbers parsed, strings
/// unescaped) and dropped. Unlike [`IgnoredAny`], it fails where `Value` fails.
#[derive(Default)]
struct AnyJson;

struct AnyJsonVisitor;

impl<'de> Visitor<'de> for AnyJsonVisitor {
    type Value = AnyJson;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_i64<E>(self, _: i64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_u64<E>(self, _: u64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_f64<E>(self, _: f64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_str<E>(self, _: &str) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_unit<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_none<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<AnyJson, D::Error> {
        AnyJson::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyJson, A::Error> {
        while seq.next_element::<AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyJson, A::Error> {
        while map.next_key::<AnyStr>()?.is_some() {
            map.next_value::<AnyJson>()?;
        }
        Ok(AnyJson)
    }
}

impl<'de> Deserialize<'de> for AnyJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyJsonVisitor)
    }
}

/// `state.history`, reduced to what the tables need: its length and whether an assistant
/// message contains `\_` or `[PYTHON]`.
#[derive(Default)]
pub(crate) struct History {
    pub len: u64,
    pub escaped_underscore: bool,
    pub python_tag: bool,
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = History;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<History, A::Error> {
                let mut h = History::default();
                while let Some(m) = seq.next_element::<Message>()? {
                    h.len += 1;
                    if m.assistant {
                        h.escaped_underscore |= m.escaped_underscore;
                        h.python_tag |= m.python_tag;
                    }
                }
                Ok(h)
            }
        }
        d.deserialize_seq(V)
    }
}

/// One `{"role", "content"}` message, reduced. The old reading concatenated the assistant
/// messages with `\n` around each and searched the whole; neither pattern contains `\n`, so
/// searching message by message finds the same.
struct Message {
    assistant: bool,
    escaped_underscore: bool,
    python_tag: bool,
}

/// Content flags, computed while serde_json holds the unescaped string.
struct Scanned {
    escaped_underscore: bool,
    python_tag: bool,
}

impl<'de> Deserialize<'de> for Scanned {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Scanned;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<Scanned, E> {
                Ok(Scanned {
                    escaped_underscore: s.contains("\\_"),
                    python_tag: s.contains("[PYTHON]"),
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// The role, compared where it lies.
struct IsAssistant(bool);

impl<'de> Deserialize<'de> for IsAssistant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IsAssistant;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, s: &str) -> Result<IsAssistant, E> {
                Ok(IsAssistant(s == "assistant"))
            }
        }
        d.deserialize_str(V)
    }
}

/// Field names of a message, as `#[derive(Deserialize)]` would match them.
enum MsgField {
    Role,
    Content,
    Other,
}

impl<'de> Deserialize<'de> for MsgField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = MsgField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E>(self, s: &str) -> Result<MsgField, E> {
                Ok(match s {
                    "role" => MsgField::Role,
                    "content" => MsgField::Content,
                    _ => MsgField::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("struct Msg")
            }
            // serde's derived structs also accept `[role, content]`; so does this.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Message, A::Error> {
                let expected = &"struct Msg with 2 elements";
                let role = seq
                    .next_element::<IsAssistant>()?
                    .ok_or_else(|| de::Error::invalid_length(0, expected))?
                    .0;
                let s = seq
                    .next_element::<Scanned>()?
                    .ok_or_else(|| de::Error::invalid_length(1, expected))?;
                Ok(Message {
                    assistant: role,
                    escaped_underscore: s.escaped_underscore,
                    python_tag: s.python_tag,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                let mut role: Option<bool> = None;
                let mut scanned: Option<Scanned> = None;
                while let Some(k) = map.next_key::<MsgField>()? {
                    match k {
                        MsgField::Role => {
                            if role.is_some() {
                                return Err(de::Error::duplicate_field("role"));
                            }
                            role = Some(map.next_value::<IsAssistant>()?.0);
                        }
                        MsgField::Content => {
                            if scanned.is_some() {
                                return Err(de::Error::duplicate_field("content"));
                            }
                            // The content of a message known not to be the assistant's is only
                            // checked to be a string (the usual order is role, then content).
                            scanned = Some(if role == Some(false) {
                                map.next_value::<AnyStr>()?;
                                Scanned {
                                    escaped_underscore: false,
                                    python_tag: false,
                                }
                            } else {
                                map.next_value::<Scanned>()?
                            });
                        }
                        MsgField::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let assistant = role.ok_or_else(|| de::Error::missing_field("role"))?;
                let s = scanned.ok_or_else(|| de::Error::missing_field("content"))?;
                Ok(Message {
                    assistant,
                    escaped_underscore: s.escaped_underscore,
                    python_tag: s.python_tag,
                })
            }
        }
        d.deserialize_struct("Msg", &["role", "content"], V)
    }
}
