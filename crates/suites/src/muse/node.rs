//! One step of a plan, as every plan format (HuggingGPT, ControlLLM, scorekit, PDDL) reads into.

/// One step of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The step's id, as text (`0`, `"a"`).
    pub id: String,
    /// Task names as the plan gave them (ControlLLM may give several for one step).
    pub names: Vec<String>,
    /// Ids of the steps whose output this one consumes.
    pub deps: Vec<String>,
    /// Output modalities the step declares (ControlLLM `returns`), empty when none.
    pub returns: Vec<String>,
}
