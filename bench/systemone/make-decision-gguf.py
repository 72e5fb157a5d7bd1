#!/usr/bin/env python3
"""Make a llama.cpp *decision* GGUF (type openjev) from Readout's judge model.

    python bench/systemone/make-decision-gguf.py \
        /work/main/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
        /work/models-bench/qwen2.5-coder-1.5b-openjev.gguf

The copy has every key and tensor of the input, plus
  <arch>.decision.type               = "openjev"   (llama-server then serves POST /v1/systemone)
  tokenizer.chat_template.systemone  = SYSTEMONE_TEMPLATE below
and no <arch>.decision.temperature.* keys, so llama.cpp's softmax runs at temperature 1.

The template renders exactly the prompt Readout renders for one System One question
(crates/readout/src/pipeline/prompt.rs, user_turn, PROMPT_VERSION v1, with the model's own
ChatML template, system + user + generation prompt), so that the token ids are equal:

  <|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n
  Text:\n{state.rstrip()}\n\nQuestion: {instructions.strip()}[\n(The options are levels, lowest first.)]
  \n\nOptions:\n{L}. {description.strip()}\n...\nAnswer with one letter.<|im_end|>\n<|im_start|>assistant\n

Variables llama.cpp gives the template (tools/server/server-decision.cpp, render()):
  id, type ("choice"|"noul"|"score"), instructions (raw JSON value), state (raw JSON value),
  options: [{key, description}] in the order whose logits it reads (labels A..Z then a..z;
  openjev gets no `label` field), images (media markers, unused here).
  noul options for openjev are [{key:"true"}, {key:"false"}] -> A = Yes, B = No, as Readout.
Non-string values (state, instructions, descriptions) are written as compact JSON
(tojson with separators [",", ":"]), which is Readout's serde_json::to_string for strings,
ints, bools and null (floats differ: the jinja engine prints them with 6 significant digits).

gguf: PyPI gguf==0.19.0 (bench/systemone/requirements.txt), or the sdist's gguf-py via --gguf-py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

SYSTEM = ("You judge texts. Read the text and the question, then answer with the letter of "
          "exactly one option and nothing else.")

# llama.cpp's jinja engine runs with trim_blocks and lstrip_blocks on; every tag here strips the
# white space around it and every newline of the prompt is written inside a string, so the
# output does not depend on those settings.
SYSTEMONE_TEMPLATE = (
    '{#- Readout prompt v1 for a System One question (openjev labels: A..Z then a..z) -#}\n'
    '{%- set letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" -%}\n'
    '{%- set sep = [",", ":"] -%}\n'
    '{%- if state is string -%}{%- set s = state -%}'
    '{%- else -%}{%- set s = state | tojson(separators=sep) -%}{%- endif -%}\n'
    '{%- if instructions is none -%}\n'
    '  {%- if type == "choice" -%}{%- set q = "Which option fits the text best?" -%}\n'
    '  {%- elif type == "noul" -%}{%- set q = "Is this true of the text?" -%}\n'
    '  {%- else -%}{%- set q = "Rate the text." -%}{%- endif -%}\n'
    '{%- elif instructions is string -%}{%- set q = instructions -%}\n'
    '{%- else -%}{%- set q = instructions | tojson(separators=sep) -%}{%- endif -%}\n'
    '{{- "<|im_start|>system\\n' + SYSTEM + '<|im_end|>\\n<|im_start|>user\\nText:\\n" -}}\n'
    '{{- s.rstrip() ~ "\\n\\nQuestion: " ~ q.strip() -}}\n'
    '{%- if type == "score" -%}{{- "\\n(The options are levels, lowest first.)" -}}{%- endif -%}\n'
    '{{- "\\n\\nOptions:\\n" -}}\n'
    '{%- for o in options -%}\n'
    '  {%- if o.description is none -%}{%- set d = none -%}\n'
    '  {%- elif o.description is string -%}{%- set d = o.description -%}\n'
    '  {%- else -%}{%- set d = o.description | tojson(separators=sep) -%}{%- endif -%}\n'
    '  {%- if type == "noul" -%}\n'
    '    {%- set word = "Yes" if o.key == "true" else "No" -%}\n'
    '    {%- if d is none or d.strip() == "" -%}{%- set t = word -%}\n'
    '    {%- else -%}{%- set t = word ~ ": " ~ d.strip() -%}{%- endif -%}\n'
    '  {%- elif d is none -%}{%- set t = o.key -%}\n'
    '  {%- else -%}{%- set t = d -%}{%- endif -%}\n'
    '  {{- letters[loop.index0] ~ ". " ~ t.strip() ~ "\\n" -}}\n'
    '{%- endfor -%}\n'
    '{{- "\\nAnswer with one letter.<|im_end|>\\n<|im_start|>assistant\\n" -}}\n'
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", type=Path, help="the judge GGUF (Readout's model file)")
    ap.add_argument("output", type=Path, help="the decision GGUF to write (keep it outside the clone)")
    ap.add_argument("--gguf-py", type=Path, help="use this gguf-py dir (e.g. the llama.cpp sdist's) instead of the installed gguf")
    ap.add_argument("--decision-type", default="openjev")
    ap.add_argument("--print-template", action="store_true", help="print the template and exit")
    args = ap.parse_args()

    if args.print_template:
        sys.stdout.write(SYSTEMONE_TEMPLATE)
        return
    if args.gguf_py:
        sys.path.insert(0, str(args.gguf_py))
    import gguf  # noqa: E402

    if args.output.resolve() == args.input.resolve():
        sys.exit("output must differ from input")
    reader = gguf.GGUFReader(args.input, "r")
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    type_key = f"{arch}.decision.type"
    tmpl_key = f"{gguf.Keys.Tokenizer.CHAT_TEMPLATE}.systemone"
    new = {type_key: args.decision_type, tmpl_key: SYSTEMONE_TEMPLATE}

    args.output.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(args.output, arch=arch, endianess=reader.endianess)
    alignment = reader.get_field(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()

    for field in reader.fields.values():
        # general.architecture is written by GGUFWriter; GGUF.* are the reader's virtual fields
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        if field.name in new:
            continue  # replaced below
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub_type)
    for k, v in new.items():
        writer.add_string(k, v)

    for t in reader.tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in reader.tensors:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    print(f"wrote {args.output}: {type_key} = {args.decision_type!r}, {tmpl_key} ({len(SYSTEMONE_TEMPLATE)} chars)")


if __name__ == "__main__":
    main()
