//! MuSE (Vyas et al. 2024): plan matching for multi-modal task planners, scored as Task Selection
//! (TS), Flow of Thought (FoT) and Final Output (O). Plain functions over plain data: parsed
//! queries, flow annotation and plans in, per-query items out, metrics computed from items only.

pub mod aliases;
pub mod flow;
pub mod metrics;
pub mod node;
pub mod outputs;
pub mod pddl;
pub mod pipeline;
pub mod plans;
pub mod score;
pub mod semantic;
pub mod suite;

pub use aliases::{AliasTable, Mapped};
pub use flow::{parse_flow, parse_queries, FlowItem, Query, REVIEWED_FLOW};
pub use metrics::{summarize, Summary};
pub use plans::{parse_plan, Node, Plan, PlanFormat};
pub use score::{score_query, Item, Violation};

/// MuSE's 18 task names with their domain and the modality of their output.
pub const TASKS: [(&str, &str, &str); 18] = [
    ("automatic-speech-recognition", "audio", "text"),
    ("text-to-audio", "audio", "audio"),
    ("visual-question-answering", "image_to_text", "text"),
    ("image-captioning", "image_to_text", "text"),
    ("image-classification", "image_to_text", "text"),
    ("object-detection", "image_to_text", "text"),
    ("depth-estimation", "image_to_image", "image"),
    ("text-to-image", "image_generation", "image"),
    ("translation-xx-to-yy", "machine_translation", "text"),
    ("abstract-summarisation", "summarisation", "text"),
    ("extractive-summarisation", "summarisation", "text"),
    ("instruction-based-summarisation", "summarisation", "text"),
    ("named-entity-recognition", "token_classification", "text"),
    ("text-classification", "text_classification", "text"),
    ("text-generation", "text_generation", "text"),
    (
        "question-answering-using-context",
        "question_answering",
        "text",
    ),
    ("open-question-answering", "question_answering", "text"),
    ("table-question-answering", "question_answering", "text"),
];

/// Whether `name` is one of MuSE's 18 task names.
pub fn is_task(name: &str) -> bool {
    TASKS.iter().any(|t| t.0 == name)
}

/// The output modality (`text`, `image`, `audio`) of a MuSE task, `None` for other names.
pub fn output_modality(task: &str) -> Option<&'static str> {
    TASKS.iter().find(|t| t.0 == task).map(|t| t.2)
}
