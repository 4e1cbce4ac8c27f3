//! The letter judge's prompt options, shared by `judge eval` and `story`: the k-shot
//! demonstrations (`--shots`, drawn as run_llm.py draws them) and the protocol settings that
//! metrics.json records.

use crate::cli::{OptionOrders, ShotArgs};
use crate::model_runtime::ModelRuntime;
use scorekit_core::error::{Error, Result};
use scorekit_report::story::LetterProtocol;
use scorekit_runtime::judge::{t5_reading, LetterReading};
use scorekit_suites::letter::{self, ShotAnswers};
use scorekit_suites::models::Setup;

/// The demonstrations block of `--shots K --shots-from FILE` ("" for zero-shot), checked before
/// any model is loaded: `letter_judge` says whether the judge is one.
pub fn shots_block(a: &ShotArgs, letter_judge: bool) -> Result<String> {
    if a.shots == 0 {
        if a.shots_from.is_some() {
            return Err(Error::usage(
                "--shots-from: give --shots K too (K demonstrations)",
            ));
        }
        return Ok(String::new());
    }
    if !letter_judge {
        return Err(Error::usage(format!(
            "--shots {}: demonstrations are for letter judges (T5); a scoring judge sees one \
             (passage, question + option) pair at a time",
            a.shots
        )));
    }
    let Some(file) = &a.shots_from else {
        return Err(Error::usage(format!(
            "--shots {}: name the questions to draw them from with --shots-from (the Possible \
             Stories train split, as run_llm.py)",
            a.shots
        )));
    };
    let (train, _) =
        scorekit_suites::judge_data::read_questions(std::slice::from_ref(file), Some(4))?;
    let picked = letter::sample_shots(train.len(), a.shots, a.shot_seed).ok_or_else(|| {
        Error::usage(format!(
            "--shots {}: {} has only {} questions",
            a.shots,
            file.display(),
            train.len()
        ))
    })?;
    let demos: Vec<_> = picked.iter().map(|&i| &train[i]).collect();
    Ok(letter::shots_block(&demos, a.shot_answers))
}

/// `--system-prompt`: a decoder judge's system message (the runtime refuses it for any other
/// judge); an empty one is refused here, since templates render it differently from none.
pub fn system_prompt(a: &ShotArgs) -> Result<Option<&str>> {
    match a.system_prompt.as_deref() {
        Some(s) if s.trim().is_empty() => Err(Error::usage(
            "--system-prompt: empty; leave the flag out for no system message",
        )),
        other => Ok(other),
    }
}

/// The protocol a letter judge's verdicts depend on, for metrics.json and report.md: the
/// prompt of `a`, and how the judge's answer becomes a pick (`reading`, the runtime's; T5's when
/// no letter judge runs, as before).
pub fn letter_protocol(a: &ShotArgs, reading: Option<&LetterReading>) -> LetterProtocol {
    let shots = if a.shots == 0 {
        "zero-shot".to_string()
    } else {
        format!(
            "{}-shot from {} (random.seed({}), random.sample, answers as {})",
            a.shots,
            a.shots_from
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            a.shot_seed,
            match a.shot_answers {
                ShotAnswers::Letters => "letters",
                ShotAnswers::Integers => "run_llm.py's integers",
            }
        )
    };
    let reading = reading.cloned().unwrap_or_else(t5_reading);
    LetterProtocol {
        prompt: format!("{shots}, nii-cl/possible-stories run_llm.py (3f8c525): instruction, demonstrations, \"\\n\", passage, question, options (A)-(D), \"Answer:\""),
        decoding: reading.decoding,
        pick: reading.pick,
        option_orders: None,
    }
}

/// `--option-orders` and `--shots` against the judge that runs (`letter_judge`: whether it is a
/// letter judge; `None` when no judge runs), written once for `story` and `judge eval`: whether
/// the options are also asked in every rotation, and the demonstrations block.
pub fn letter_options(
    orders: OptionOrders,
    shots: &ShotArgs,
    letter_judge: Option<bool>,
) -> Result<(bool, String)> {
    let cyclic = orders == OptionOrders::Cyclic;
    if cyclic && letter_judge != Some(true) {
        return Err(Error::usage(
            "--option-orders cyclic: a scoring judge scores each option on its own, so the order \
             of the options cannot change its pick; the flag is for letter judges (T5)",
        ));
    }
    let block = match letter_judge {
        Some(letter) => shots_block(shots, letter)?,
        None if shots.shots > 0 => {
            return Err(Error::usage("--shots: no judge runs (--skip-judge)"))
        }
        None => String::new(),
    };
    Ok((cyclic, block))
}

/// How the lent models run: the letter flags checked against the judge (`letter_judge`, as in
/// [`letter_options`]) and the runtime's device and precision; built once for `story` and
/// `judge eval`.
pub fn setup(
    rt: &ModelRuntime,
    orders: OptionOrders,
    shots: &ShotArgs,
    reading: Option<Option<LetterReading>>,
) -> Result<Setup> {
    let letter_judge = reading.as_ref().map(Option::is_some);
    let (cyclic, block) = letter_options(orders, shots, letter_judge)?;
    Ok(Setup {
        shots: block,
        cyclic,
        letter: letter_protocol(shots, reading.flatten().as_ref()),
        device: rt.device_name(),
        quantize: rt.quantize_setting(),
        tf32: rt.tf32,
    })
}
