//! The two models a bench measures, as the one timing loop ([`crate::measure`]) drives them: a
//! sentence embedder over texts and an MRC judge over (passage, question + option) pairs. Each
//! says how it is loaded, tokenised and run on a batch; the loop times them alike.

use crate::corpus::Items;
use crate::variant::Variant;
use indicatif::ProgressBar;
use scorekit_core::error::Result;
use scorekit_runtime::batching::BatchPlan;
use scorekit_runtime::judge::Judge;
use scorekit_runtime::{models, Embedder, ResolvedModel, Tokens};

/// The outputs of a batch or a pass, one row an item.
#[derive(Debug, Clone)]
pub enum Rows {
    /// An embedder's vectors.
    Vectors(Vec<Vec<f32>>),
    /// A judge's scores, one a pair.
    Scores(Vec<f32>),
}

/// A loaded model as the timing loop drives it.
pub trait Subject {
    /// The engine as it names itself.
    fn engine(&self) -> &str;
    /// The architecture, where it is named (a judge's).
    fn arch(&self) -> Option<&str> {
        None
    }
    /// The truncation length in effect.
    fn max_length(&self) -> usize;
    /// (layers, hidden size, intermediate size): what the FLOP count needs.
    fn dims(&self) -> (usize, usize, usize);
    /// The cold first request: 32 sentences, or one question's four pairs.
    fn first(&self, batch_tokens: usize) -> Result<()>;
    /// Tokenise every item once, keeping what [`Subject::hold`] needs: token counts in item order.
    fn lengths(&mut self) -> Result<Vec<usize>>;
    /// Make the batches of `plan` ready to run, so that building them is not timed.
    fn hold(&mut self, plan: &[BatchPlan]);
    /// Tokenise every item again, as a pass does (timed apart, the result dropped).
    fn tokenize(&self) -> Result<()>;
    /// Run held batch `k`.
    fn run(&self, k: usize, batch_tokens: usize) -> Result<Rows>;
    /// Whether a pass's time adds the tokenisation: the embedder's batches run on tokens made
    /// apart, while the judge's batches tokenise their own pairs.
    fn pass_adds_tokenize(&self) -> bool;
}

/// Load the subject of `items` (an embedder for texts, a judge for pairs) in `variant`.
pub fn load<'a>(
    model: &ResolvedModel,
    items: &'a Items,
    variant: &Variant,
    max_length: Option<usize>,
) -> Result<Box<dyn Subject + 'a>> {
    let (device, dtype, engine) = (&variant.device, variant.dtype, &variant.engine);
    Ok(match items {
        Items::Texts(texts) => {
            let bert = models::read_config(&model.file("config.json"), "bert")?
                .1
                .bert;
            Box::new(EmbedderSubject {
                embedder: Embedder::load(model, device, dtype, max_length, engine)?,
                dims: (
                    bert.num_hidden_layers,
                    bert.hidden_size,
                    bert.intermediate_size,
                ),
                texts,
                tokens: Vec::new(),
                batches: Vec::new(),
                hidden: ProgressBar::hidden(),
            })
        }
        Items::Pairs(pairs) => Box::new(JudgeSubject {
            judge: Judge::load(&model.dir, device, dtype, max_length, None, engine)?,
            pairs,
            batches: Vec::new(),
            hidden: ProgressBar::hidden(),
        }),
    })
}

/// Sentences of the cold first batch of an embedder.
const FIRST_SENTENCES: usize = 32;
/// Pairs of the cold first batch of a judge: one question's four options.
const FIRST_PAIRS: usize = 4;

/// A sentence embedder on its texts.
struct EmbedderSubject<'a> {
    embedder: Embedder,
    dims: (usize, usize, usize),
    texts: &'a [String],
    tokens: Vec<Tokens>,
    batches: Vec<Vec<Tokens>>,
    hidden: ProgressBar,
}

impl Subject for EmbedderSubject<'_> {
    fn engine(&self) -> &str {
        self.embedder.engine()
    }

    fn max_length(&self) -> usize {
        self.embedder.tokenizer().max_length()
    }

    fn dims(&self) -> (usize, usize, usize) {
        self.dims
    }

    fn first(&self, batch_tokens: usize) -> Result<()> {
        let n = self.texts.len().min(FIRST_SENTENCES);
        self.embedder
            .embed(&self.texts[..n], batch_tokens, &self.hidden)
            .map(drop)
    }

    fn lengths(&mut self) -> Result<Vec<usize>> {
        self.tokens = self.embedder.tokenize(self.texts)?;
        Ok(self.tokens.iter().map(Tokens::len).collect())
    }

    fn hold(&mut self, plan: &[BatchPlan]) {
        self.batches = plan
            .iter()
            .map(|b| b.indices.iter().map(|&i| self.tokens[i].clone()).collect())
            .collect();
    }

    fn tokenize(&self) -> Result<()> {
        self.embedder.tokenize(self.texts).map(drop)
    }

    fn run(&self, k: usize, batch_tokens: usize) -> Result<Rows> {
        let rows = self
            .embedder
            .embed_tokens(&self.batches[k], batch_tokens, &self.hidden)?;
        Ok(Rows::Vectors(rows))
    }

    fn pass_adds_tokenize(&self) -> bool {
        true
    }
}

/// An MRC judge on its pairs.
struct JudgeSubject<'a> {
    judge: Judge,
    pairs: &'a [(String, String)],
    batches: Vec<Vec<(String, String)>>,
    hidden: ProgressBar,
}

impl Subject for JudgeSubject<'_> {
    fn engine(&self) -> &str {
        self.judge.engine()
    }

    fn arch(&self) -> Option<&str> {
        Some(self.judge.arch())
    }

    fn max_length(&self) -> usize {
        self.judge.max_length()
    }

    fn dims(&self) -> (usize, usize, usize) {
        self.judge.dims()
    }

    fn first(&self, batch_tokens: usize) -> Result<()> {
        let n = self.pairs.len().min(FIRST_PAIRS);
        self.judge
            .score(&self.pairs[..n], batch_tokens, &self.hidden)
            .map(drop)
    }

    fn lengths(&mut self) -> Result<Vec<usize>> {
        Ok(self
            .judge
            .encode(self.pairs)?
            .iter()
            .map(Tokens::len)
            .collect())
    }

    fn hold(&mut self, plan: &[BatchPlan]) {
        self.batches = plan
            .iter()
            .map(|b| b.indices.iter().map(|&i| self.pairs[i].clone()).collect())
            .collect();
    }

    fn tokenize(&self) -> Result<()> {
        self.judge.encode(self.pairs).map(drop)
    }

    fn run(&self, k: usize, batch_tokens: usize) -> Result<Rows> {
        let scores = self
            .judge
            .score(&self.batches[k], batch_tokens, &self.hidden)?;
        Ok(Rows::Scores(scores))
    }

    fn pass_adds_tokenize(&self) -> bool {
        false
    }
}
