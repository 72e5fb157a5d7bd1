"""Readout as an lm-evaluation-harness backend: ``--model readout``.

lm-evaluation-harness (0.4.13) finds models in its own registry only (no entry-point group): the
wheel's ``readout-lm-eval.pth`` hook (``_readout_lm_eval_hook``) registers ``readout`` there,
lazily, when the harness imports its models, so the harness's own command line takes it::

    lm_eval run --model readout --model_args model=models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --tasks authored144 --include_path examples/lm_eval

Importing this module registers the class itself (for a Python without the hook: a source tree
on ``sys.path``), and ``python -m readout.lm_eval`` runs the same command line.

``loglikelihood``: every request of the call is planned as one prefix tree by the library
(``readout::loglik``): the contexts computed once per shared prefix, each continuation a leaf
read at every one of its positions in one pass, the full vocabulary's log-softmax taken there.
``loglikelihood_rolling`` and ``generate_until`` are refused with a message saying so.

Model arguments: ``model`` (a GGUF file or a Hugging Face directory; default: the default model),
``chat_template`` (only recorded: the harness renders its own prompts, as text),
``threads``, ``pass_tokens``, ``weights``, ``kv_cache`` and ``attention`` (as the CLI's options;
``attention=kernel`` on the CPU makes each request's numbers independent of what else is in the
call). The harness's ``--device cpu`` is honoured (any other value
means ``auto``); its ``--batch_size`` is accepted and ignored: batching is the library's (every
request of a call in one tree).
"""

from __future__ import annotations

from typing import Any, Optional

from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model

from . import Judge, ReadoutError

# End-of-text tokens, in the order tried for the harness's empty-context prefix.
_EOT_NAMES = ("<|endoftext|>", "<|im_end|>", "</s>", "<eos>", "<|end_of_text|>", "<end_of_turn>")


@register_model("readout")
class ReadoutLM(TemplateLM):
    """lm-evaluation-harness's model interface over a :class:`readout.Judge`."""

    def __init__(
        self,
        model: Optional[str] = None,
        device: str = "auto",
        chat_template: Optional[str] = None,
        threads: Optional[int] = None,
        pass_tokens: Optional[int] = None,
        weights: str = "auto",
        kv_cache: str = "auto",
        attention: str = "auto",
        batch_size: Any = None,
        max_batch_size: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        # The harness passes its own `--device` (its default "cuda", "cuda:0", "mps", "cpu"):
        # "cpu" is honoured; anything else is `auto`, a GPU when the wheel has one built in.
        device = device if device in ("cpu", "metal") else "auto"
        self.judge = Judge(
            model,
            device,
            chat_template,
            threads=None if threads is None else int(threads),
            weights=weights,
            kv_cache=kv_cache,
            attention=attention,
        )
        self.pass_tokens = None if pass_tokens is None else int(pass_tokens)
        self.model_path = model
        self._eot = self._find_eot()
        #: What the last loglikelihood call put through the model (tokens asked, computed, passes).
        self.last_work: dict[str, int] = {}

    def _find_eot(self) -> int:
        for name in _EOT_NAMES:
            ids = self.judge.tokenize(name)
            if len(ids) >= 1 and self.judge.detokenize(ids[-1:]) == name:
                return ids[-1]
        raise ReadoutError("the model's vocabulary has none of the end-of-text tokens " + ", ".join(_EOT_NAMES))

    @property
    def eot_token_id(self) -> int:
        return self._eot

    @property
    def max_length(self) -> int:
        return int(self.judge.info["config"]["context_length"])

    @property
    def tokenizer_name(self) -> str:
        return str(self.judge.info["name"])

    def tok_encode(self, string: str, add_special_tokens: Optional[bool] = None, **kwargs: Any) -> list[int]:
        ids = self.judge.tokenize(string)
        if add_special_tokens is False:
            # Without special tokens: no BOS (the library puts it first where the model asks).
            bos = self.judge.tokenize("")
            if bos and ids[: len(bos)] == bos:
                return ids[len(bos) :]
        return ids

    def tok_decode(self, tokens: list[int], **kwargs: Any) -> str:
        return self.judge.detokenize(tokens)

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, **kwargs: Any) -> list[tuple[float, bool]]:
        pairs = [(context_enc, continuation_enc) for _, context_enc, continuation_enc in requests]
        answers, self.last_work = self.judge.loglikelihood_work(pairs, pass_tokens=self.pass_tokens)
        out: list[tuple[float, bool]] = []
        for (key, _, _), (logprob, greedy) in zip(requests, answers):
            answer = (float(logprob), bool(greedy))
            if key is not None:
                self.cache_hook.add_partial("loglikelihood", key, answer)
            out.append(answer)
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError(
            "the readout backend serves loglikelihood (multiple-choice tasks) only; "
            "loglikelihood_rolling (perplexity tasks) is not implemented: use the hf or gguf backend for those"
        )

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        raise NotImplementedError(
            "the readout backend serves loglikelihood (multiple-choice tasks) only; "
            "generate_until (generation tasks) is not implemented: use the hf or gguf backend for those"
        )


def main() -> None:
    """The harness's command line, with ``--model readout`` registered."""
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()


if __name__ == "__main__":
    main()
