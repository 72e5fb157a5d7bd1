//! A System One request decided: [`decide`] asks Readout's own prompt through the score job, or a
//! decision model by its own contract ([`Contract`]): the
//! prompt its `systemone` template renders, the labels or codes it was trained to answer with,
//! its temperatures — as llama.cpp b11434's `/v1/systemone` asks it
//! (`tools/server/server-decision.cpp`), so that a decision GGUF answers in Readout as it
//! answers there. Readout's debias modes apply on top: each ordering of a question's options is
//! one more rendering, and the orderings' probabilities are averaged (`x_debias: none` gives
//! llama.cpp's answer). Every rendering of a request shares the tokens before their first
//! difference (the state, usually) as one cached prefix.
//!
//! Per type:
//! - `openjev`: one letter a option, `A`–`Z` then `a`–`z` (52), each a single token; `noul`
//!   shows `true` before `false`.
//! - `lev`: codes `A`…`Z`, `AA`…`ZZ` that are single tokens (up to 255); a choice of two or more
//!   options is also shown in reverse order and the two averaged; `noul` is read as a rating of
//!   9 levels (the first nine codes, 0 = certainly no) and answered with its expected value; the
//!   template's input has its keys sorted.
//! - `nimble`: lev's codes; the template also sees every question of the request.
//! - the head-based types (`kev`, `laya`, `clef`, `pplx-decider`) are refused by name.

use crate::config::RunConfig;
use crate::debias::{self, DebiasMode};
use crate::engine::decision::{head_based, Contract, LETTER_TYPES};
use crate::engine::{Engine, Prefix, Suffix};
use crate::error::{Error, Result};
use crate::jobs::systemone::{choice_confidence, score_confidence, SystemOneRequest, SystemOneResponse, Usage};
use serde_json::{json, Map, Value};

/// lev reads `noul` on a rating of this many levels.
const LEV_RATINGS: usize = 9;

/// A question as the contract shows it: its type, instructions and options (key, description).
struct Asked {
    id: String,
    kind: &'static str,
    instructions: Value,
    options: Vec<(String, Value)>,
}

/// One rendering of one question: the options in `order` (display slot → option).
struct Variant {
    question: usize,
    order: Vec<usize>,
    tokens: Vec<u32>,
}

/// The labels a contract reads, as text and token: openjev's letters, lev's and nimble's codes.
fn labels(engine: &Engine, contract: &Contract) -> Result<Vec<(String, u32)>> {
    let single = |text: &str| -> Result<Option<u32>> {
        let ids = engine.tokenizer().encode_plain(text)?;
        Ok(match ids[..] {
            [id] => Some(id),
            _ => None,
        })
    };
    let mut out = Vec::new();
    if contract.kind == "openjev" {
        for c in ('A'..='Z').chain('a'..='z') {
            let text = c.to_string();
            let id = single(&text)?.ok_or_else(|| {
                Error::Config(format!(
                    "this openjev decision model's label `{c}` is not a single token of its vocabulary; the file is not a usable openjev model"
                ))
            })?;
            out.push((text, id));
        }
        return Ok(out);
    }
    let letters: Vec<char> = ('A'..='Z').collect();
    let codes = letters
        .iter()
        .map(|a| a.to_string())
        .chain(letters.iter().flat_map(|a| letters.iter().map(move |b| format!("{a}{b}"))));
    for code in codes {
        if out.len() == 255 {
            break;
        }
        if let Some(id) = single(&code)? {
            out.push((code, id));
        }
    }
    Ok(out)
}

/// The questions of `request` as the contract asks them, from the request's own JSON.
fn asked(request: &SystemOneRequest, contract: &Contract) -> Vec<Asked> {
    let empty = Map::new();
    let questions = request.body.get("questions").and_then(Value::as_object).unwrap_or(&empty);
    questions
        .iter()
        .map(|(id, q)| {
            let kind = match q.get("type").and_then(Value::as_str) {
                Some("noul") => "noul",
                Some("score") => "score",
                _ => "choice",
            };
            // llama.cpp asks for instructions; a noul without them (which TypeSafe allows) is
            // asked as Readout asks it.
            let instructions = match q.get("instructions") {
                Some(v) if !v.is_null() => v.clone(),
                _ => Value::from("Is this true of the text?"),
            };
            let criteria = q.get("criteria").cloned().unwrap_or(Value::Null);
            let options: Vec<(String, Value)> = match kind {
                "choice" => criteria.as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
                "score" => criteria
                    .as_array()
                    .map(|levels| levels.iter().enumerate().map(|(i, v)| (i.to_string(), v.clone())).collect()),
                _ => {
                    let pick = |k: &str| criteria.get(k).cloned().unwrap_or(Value::Null);
                    let both = vec![("false".to_string(), pick("false")), ("true".to_string(), pick("true"))];
                    Some(match contract.kind == "openjev" {
                        true => both.into_iter().rev().collect(),
                        false => both,
                    })
                }
            }
            .unwrap_or_default();
            Asked { id: id.clone(), kind, instructions, options }
        })
        .collect()
}

/// `value` with the keys of every object sorted (lev was trained so).
fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sort_keys(&m[k]))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// JSON text as llama.cpp's template engine writes it for `tojson`: `", "` between items,
/// `": "` after keys, nothing escaped but what JSON needs, keys in their order, floats as C++
/// streams print them (six significant digits).
fn to_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&cpp_float(f)),
            _ => out.push_str("null"),
        },
        Value::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                to_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                to_json(&Value::String(k.clone()), out);
                out.push_str(": ");
                to_json(x, out);
            }
            out.push('}');
        }
    }
}

/// A float as C++'s `ostream << double` prints it by default (`%g`, six significant digits).
fn cpp_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let exp = f.abs().log10().floor() as i32;
    if (-5..6).contains(&exp) {
        let decimals = (5 - exp).max(0) as usize;
        let s = format!("{f:.decimals$}");
        let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
        return s;
    }
    let mantissa = f / 10f64.powi(exp);
    let m = format!("{mantissa:.5}");
    let m = m.trim_end_matches('0').trim_end_matches('.');
    format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// The contract's template, compiled with llama.cpp's `tojson`.
fn environment(contract: &Contract) -> Result<minijinja::Environment<'static>> {
    let source = contract.template.clone().ok_or_else(|| {
        Error::Config(format!(
            "this {} decision model has no `systemone` template (tokenizer.chat_template.systemone); the file is incomplete",
            contract.kind
        ))
    })?;
    let mut env = minijinja::Environment::new();
    minijinja_contrib::add_to_environment(&mut env);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", |v: minijinja::Value| -> std::result::Result<String, minijinja::Error> {
        let json = serde_json::to_value(&v)
            .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))?;
        let mut out = String::new();
        to_json(&json, &mut out);
        Ok(out)
    });
    env.add_template_owned("systemone", source)
        .map_err(|e| Error::Config(format!("the model's `systemone` template does not compile: {e}")))?;
    Ok(env)
}

/// The options of `q` in `order`, as the template sees them.
fn options(q: &Asked, order: &[usize], labels: &[(String, u32)], with_labels: bool) -> Value {
    Value::Array(
        order
            .iter()
            .enumerate()
            .map(|(slot, &o)| {
                let (key, description) = &q.options[o];
                let mut option = json!({"key": key, "description": description});
                if with_labels {
                    option["label"] = Value::from(labels[slot].0.clone());
                }
                option
            })
            .collect(),
    )
}

/// The orderings a question is shown in: the debias mode's, and for lev's choices each one's
/// reverse too; lev's noul (a rating, not a pick) and questions of one option in one.
fn orders(contract: &Contract, q: &Asked, mode: DebiasMode) -> Result<Vec<Vec<usize>>> {
    let n = q.options.len();
    let lev = contract.kind == "lev";
    if lev && q.kind == "noul" {
        return Ok(vec![(0..n).collect()]);
    }
    let mode = match mode {
        DebiasMode::None | DebiasMode::Cyclic | DebiasMode::Permutation => mode,
        other => {
            return Err(Error::Config(format!(
                "debias mode `{other}` needs Readout's own prompt; a decision model is asked by its contract with `none`, `cyclic` or `permutation`"
            )))
        }
    };
    let mut out = debias::orderings(mode, n).map_err(Error::Config)?;
    if lev && q.kind == "choice" && n > 1 {
        out = out.into_iter().flat_map(|o| [o.clone(), o.into_iter().rev().collect()]).collect();
    }
    Ok(out)
}

/// Decide a request on `engine` alone (the CLI's `decide`, Python's `Judge.decide`; a server
/// batches requests through [`crate::jobs::score::score_requests`] instead, with the same bits):
/// its job under `config` ([`SystemOneRequest::job`]), its usage and its answer. A decision
/// model (one whose file states a contract) is asked by its contract ([`by_contract`]).
pub fn decide(
    engine: &Engine,
    request: &SystemOneRequest,
    config: RunConfig,
    default: DebiasMode,
) -> Result<SystemOneResponse> {
    if engine.info().decision.is_some() {
        return by_contract(engine, request, default);
    }
    let job = request.job(config, default)?;
    let usage = Usage { input_tokens: request.input_tokens(engine)?, output_tokens: 0 };
    let results = crate::jobs::score::score_texts(
        engine,
        &job.rubric,
        &job.texts,
        &job.config,
        &Default::default(),
        &mut |_, _, _| true,
    )?;
    let result = results.first().ok_or_else(|| Error::Config("the state was not decided".into()))?;
    Ok(request.response(&engine.info().name, result, usage, job.config.debias))
}

/// Decide `request` on a decision model by its contract, with `default` the shell's debias mode.
/// What the contract or the request cannot do is refused naming the model file.
pub fn by_contract(engine: &Engine, request: &SystemOneRequest, default: DebiasMode) -> Result<SystemOneResponse> {
    ask(engine, request, default).map_err(|e| match e {
        Error::Config(m) => Error::Config(format!("{}: {m}", engine.info().path.display())),
        other => other,
    })
}

fn ask(engine: &Engine, request: &SystemOneRequest, default: DebiasMode) -> Result<SystemOneResponse> {
    let contract =
        engine.info().decision.clone().ok_or_else(|| Error::Config("the model states no decision contract".into()))?;
    if let Some(missing) = head_based(&contract.kind) {
        return Err(Error::Config(format!(
            "this decision model's contract is `{}`, answered by {missing}; Readout reads the labels' logits ({}), not heads",
            contract.kind,
            LETTER_TYPES.join(", ")
        )));
    }
    if !LETTER_TYPES.contains(&contract.kind.as_str()) {
        return Err(Error::Config(format!(
            "the decision type `{}` is unknown; Readout reads {}",
            contract.kind,
            LETTER_TYPES.join(", ")
        )));
    }
    if let Some((k, t)) = contract.temperatures.iter().find(|(_, t)| !(t.is_finite() && **t > 0.0)) {
        return Err(Error::Config(format!("the decision temperature `{k}` is {t}; each must be a positive number")));
    }
    let labels = labels(engine, &contract)?;
    let questions = asked(request, &contract);
    let lev = contract.kind == "lev";
    let with_labels = contract.kind != "openjev";
    for q in &questions {
        let outputs = if lev && q.kind == "noul" { LEV_RATINGS } else { q.options.len() };
        if q.options.len() > labels.len() || outputs > labels.len() {
            return Err(Error::Config(format!(
                "question `{}` has {} options; this {} model reads at most {} (the labels that are single tokens of its vocabulary)",
                q.id,
                q.options.len(),
                contract.kind,
                labels.len()
            )));
        }
    }
    let mode = request.debias_mode(default);
    let env = environment(&contract)?;
    let template =
        env.get_template("systemone").map_err(|e| Error::Config(format!("the model's `systemone` template: {e}")))?;
    let state = request.body.get("state").cloned().unwrap_or(Value::Null);
    let everyone: Vec<Value> = questions
        .iter()
        .map(|q| {
            let order: Vec<usize> = (0..q.options.len()).collect();
            json!({"id": q.id, "type": q.kind, "instructions": q.instructions, "options": options(q, &order, &labels, with_labels)})
        })
        .collect();
    let mut variants = Vec::new();
    for (qi, q) in questions.iter().enumerate() {
        for order in orders(&contract, q, mode)? {
            let mut input = json!({
                "id": q.id,
                "type": q.kind,
                "instructions": q.instructions,
                "state": state,
                "options": options(q, &order, &labels, with_labels),
            });
            if contract.kind == "nimble" {
                input["questions"] = Value::Array(everyone.clone());
            }
            if lev {
                input = sort_keys(&input);
            }
            input["images"] = json!([]);
            let prompt = template.render(minijinja::Value::from_serialize(&input)).map_err(|e| {
                Error::Config(format!("the model's `systemone` template failed on question `{}`: {e}", q.id))
            })?;
            let tokens = engine.tokenizer().encode_plain(&prompt)?;
            variants.push(Variant { question: qi, order, tokens });
        }
    }
    // Every rendering shares the tokens up to the first that differs; each keeps at least one.
    let shared = variants
        .iter()
        .map(|v| v.tokens.len().saturating_sub(1))
        .chain(variants.windows(2).map(|w| w[0].tokens.iter().zip(&w[1].tokens).take_while(|(a, b)| a == b).count()))
        .min()
        .unwrap_or(0);
    let first = variants.first().ok_or_else(|| Error::Config("the request has no questions".into()))?;
    let prefix = engine.extend(&Prefix::empty(), &first.tokens[..shared])?;
    let reads: Vec<Vec<u32>> = variants
        .iter()
        .map(|v| {
            let q = &questions[v.question];
            let n = if lev && q.kind == "noul" { LEV_RATINGS } else { q.options.len() };
            labels[..n].iter().map(|l| l.1).collect()
        })
        .collect();
    let suffixes: Vec<Suffix<'_>> =
        variants.iter().zip(&reads).map(|(v, read)| Suffix { tokens: &v.tokens[shared..], read }).collect();
    let read = engine.read(&prefix, &suffixes)?;
    let input_tokens = variants.iter().map(|v| v.tokens.len()).sum();
    let mut answers = Map::new();
    for (qi, q) in questions.iter().enumerate() {
        let n = q.options.len();
        let outputs = if lev && q.kind == "noul" { LEV_RATINGS } else { n };
        let t = contract.temperature(q.kind, n) as f64;
        let mut per_order: Vec<Vec<f64>> = Vec::new();
        let mut mass = Vec::new();
        for (v, r) in variants.iter().zip(&read).filter(|(v, _)| v.question == qi) {
            let top = r.logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x)) as f64;
            let e: Vec<f64> = r.logits.iter().map(|&x| ((x as f64 - top) / t).exp()).collect();
            let sum: f64 = e.iter().sum();
            let p: Vec<f64> = e.iter().map(|x| x / sum).collect();
            per_order.push(match outputs == n {
                true => debias::to_option_space(&p, &v.order),
                false => p,
            });
            mass.extend(r.letter_mass.map(f64::from));
        }
        let probs = debias::average(&per_order);
        let unstable = if q.kind == "noul" && lev { None } else { debias::order_unstable(&per_order) };
        let mut answer = Map::new();
        answer.insert("type".into(), Value::from(q.kind));
        match q.kind {
            "noul" if lev => {
                let expected: f64 = probs.iter().enumerate().map(|(i, p)| p * i as f64 / (outputs - 1) as f64).sum();
                answer.insert("noul".into(), Value::from(expected));
            }
            "noul" => {
                let at = q.options.iter().position(|(k, _)| k == "true").unwrap_or(0);
                answer.insert("noul".into(), Value::from(probs[at]));
            }
            "choice" => {
                let best = crate::math::argmax(&probs);
                answer.insert("choice".into(), Value::from(q.options[best].0.clone()));
                answer.insert("probabilities".into(), by_key(q, &probs));
                answer.insert("confidence".into(), Value::from(choice_confidence(&probs)));
            }
            _ => {
                let expected: f64 = probs.iter().enumerate().map(|(i, p)| i as f64 * p).sum();
                answer.insert("score".into(), Value::from(expected));
                let legend: Map<String, Value> = q.options.iter().map(|(k, d)| (k.clone(), d.clone())).collect();
                answer.insert("legend".into(), Value::Object(legend));
                answer.insert("probabilities".into(), by_key(q, &probs));
                answer.insert("confidence".into(), Value::from(score_confidence(&probs)));
            }
        }
        if let Some(u) = unstable {
            answer.insert("x_order_unstable".into(), Value::from(u));
        }
        if !mass.is_empty() {
            answer.insert("x_letter_mass".into(), Value::from(mass.iter().sum::<f64>() / mass.len() as f64));
        }
        answer.insert("x_contract".into(), Value::from(contract.kind.clone()));
        answers.insert(q.id.clone(), Value::Object(answer));
    }
    Ok(SystemOneResponse {
        model: engine.info().name.clone(),
        answers,
        usage: Usage { input_tokens, output_tokens: 0 },
        x_debias: mode.to_string(),
    })
}

fn by_key(q: &Asked, probs: &[f64]) -> Value {
    Value::Object(q.options.iter().zip(probs).map(|((k, _), p)| (k.clone(), Value::from(*p))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tojson_as_llama_cpp_writes_it() {
        let mut out = String::new();
        to_json(&json!({"b": [1, 2.5, "x\n\"y\""], "a": null, "é": true}), &mut out);
        assert_eq!(out, r#"{"b": [1, 2.5, "x\n\"y\""], "a": null, "é": true}"#);
        for (f, want) in
            [(0.1, "0.1"), (1.23456789, "1.23457"), (1e-7, "1e-07"), (123456789.0, "1.23457e+08"), (100.0, "100")]
        {
            assert_eq!(cpp_float(f), want, "{f}");
        }
    }

    #[test]
    fn lev_sorts_keys_at_every_depth() {
        let v = sort_keys(&json!({"b": {"d": 1, "c": 2}, "a": [{"z": 0, "y": 1}]}));
        assert_eq!(v.to_string(), r#"{"a":[{"y":1,"z":0}],"b":{"c":2,"d":1}}"#);
    }
}
