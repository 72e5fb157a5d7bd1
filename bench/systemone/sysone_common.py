"""Shared by the System One bench scripts (stdlib only): the example rubric's three questions in
System One form, the authored144 states, and Readout's prompt for one question, built from the
format in crates/readout/src/pipeline/prompt.rs (user_turn, prompt v1) and
crates/readout/src/jobs/systemone.rs (how a System One question becomes a criterion)."""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUBRIC = ROOT / "examples" / "support-ticket.rubric.json"
AUTHORED144 = ROOT / "bench" / "evalsets" / "authored144.jsonl"

SYSTEM = ("You judge texts. Read the text and the question, then answer with the letter of "
          "exactly one option and nothing else.")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
DEFAULT_INSTRUCTIONS = {
    "choice": "Which option fits the text best?",
    "noul": "Is this true of the text?",
    "score": "Rate the text.",
}

# Rust's char::is_whitespace (Unicode White_Space), which str::trim uses; Python's str.strip
# differs on U+001C..U+001F.
RUST_WS = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
           "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def rtrim(s: str) -> str:
    return s.rstrip(RUST_WS)


def trim(s: str) -> str:
    return s.strip(RUST_WS)


def questions() -> dict:
    """The three questions of examples/support-ticket.rubric.json in System One form."""
    r = json.loads(RUBRIC.read_text())["questions"]
    topic, refund, urgency = r["topic"], r["refund_requested"], r["urgency"]
    return {
        "topic": {"type": "choice", "instructions": topic["instructions"], "criteria": topic["criteria"]},
        "refund": {"type": "noul", "instructions": refund["instructions"], "criteria": {"true": refund["criteria"]}},
        "urgency": {"type": "score", "instructions": urgency["instructions"], "criteria": urgency["criteria"]},
    }


def states(path: Path = AUTHORED144) -> list[str]:
    return [json.loads(line)["state"] for line in path.read_text().splitlines() if line.strip()]


def text_of(v) -> str:
    """A string as it is, anything else as compact JSON in the request's key order
    (serde_json::to_string with preserve_order)."""
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def readout_options(q: dict) -> list[str]:
    t, crit = q["type"], q.get("criteria")
    if t == "choice":
        return [name if d is None else text_of(d) for name, d in crit.items()]
    if t == "noul":
        crit = crit or {}
        out = []
        for side, word in (("true", "Yes"), ("false", "No")):
            d = crit.get(side)
            d = None if d is None else trim(text_of(d))
            out.append(word if not d else f"{word}: {d}")
        return out
    if t == "score":
        return [text_of(d) for d in crit]
    raise ValueError(t)


def readout_user_turn(state, q: dict) -> str:
    instr = q.get("instructions")
    instr = DEFAULT_INSTRUCTIONS[q["type"]] if instr is None else text_of(instr)
    opts = readout_options(q)
    assert len(opts) <= 26, "past 26 options Readout shows two-letter codes"
    s = "Text:\n" + rtrim(text_of(state)) + "\n\nQuestion: " + trim(instr)
    if q["type"] == "score":
        s += "\n(The options are levels, lowest first.)"
    s += "\n\nOptions:\n" + "".join(f"{LETTERS[i]}. {trim(d)}\n" for i, d in enumerate(opts))
    return s + "\nAnswer with one letter."


def readout_prompt(state, q: dict) -> str:
    """[system, user] through Qwen2.5's ChatML template with the generation prompt."""
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
            f"<|im_start|>user\n{readout_user_turn(state, q)}<|im_end|>\n"
            f"<|im_start|>assistant\n")
