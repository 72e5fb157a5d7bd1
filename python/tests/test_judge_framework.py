"""An LLM-judge framework people already use, end to end on `readout serve`: Inspect AI's
`generate()` solver answers a few short questions and its `model_graded_qa()` scorer grades the
answers, both models being Inspect's `openai/...` provider pointed at the real server (conftest's
`server`, the default model). The eval must finish, every sample must get a grade, the grader's
requests must have reached the server, and the solver's log-probabilities must come back. Which
grade the tiny model gives is not asserted. Inspect's logs and its data folder (traces, sample
buffer) go into pytest's tmp_path: nothing is written into the clone or the home folder."""

import json
import math
import urllib.request

import pytest

pytest.importorskip("openai")
inspect_ai = pytest.importorskip("inspect_ai")

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import GenerateConfig, get_model  # noqa: E402
from inspect_ai.scorer import model_graded_qa  # noqa: E402
from inspect_ai.solver import generate  # noqa: E402

SAMPLES = [
    Sample(input="What is the capital of France? Answer in one word.", target="Paris"),
    Sample(input="What is 2 + 2? Answer with a number.", target="4"),
    Sample(input="Name a colour of the sky on a clear day.", target="blue"),
    Sample(input="Which animal says 'meow'?", target="a cat"),
]

# model_graded_qa's own template, with instructions a 135M model follows: its default ones (a
# chain of thought ending in 'GRADE: C' or 'GRADE: I') are beyond it, and every grade would be
# "grader_failed". Yes/No are grades Inspect's accuracy metric reads (1 and 0).
INSTRUCTIONS = "Answer Yes or No."
GRADE_PATTERN = r"(?i)\b(yes|no)\b"


@pytest.fixture
def inspect_home(tmp_path, monkeypatch):
    """Inspect keeps traces, a sample buffer and its last eval in its platformdirs folders: the
    test's own. Nothing from the environment chooses its models or their endpoint."""
    for var in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "INSPECT_EVAL_MODEL", "INSPECT_LOG_DIR"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def served(server, name, **config):
    """Inspect's OpenAI provider on the server. `responses_api=False`: Inspect takes a model name
    it does not know for OpenAI's newest and would use the Responses API (POST /v1/responses),
    which the server does not serve; Chat Completions it does. No temperature is set: the server
    is greedy, and Inspect sends none unless told to."""
    return get_model(
        f"openai/{name}",
        base_url=server + "/v1",
        api_key="none",
        responses_api=False,
        config=GenerateConfig(**config),
    )


def model_events(sample):
    return [e for e in sample.events if getattr(e, "event", None) == "model"]


def test_inspect_grades_the_served_model_s_answers_with_the_served_model(server, inspect_home):
    served_id = json.load(urllib.request.urlopen(server + "/v1/models"))["data"][0]["id"]
    subject = served(server, "subject", max_tokens=24, logprobs=True, top_logprobs=5)
    grader = served(server, "grader", max_tokens=8)
    task = Task(
        dataset=SAMPLES,
        solver=generate(),
        scorer=model_graded_qa(instructions=INSTRUCTIONS, grade_pattern=GRADE_PATTERN, model=grader),
    )
    logs = inspect_eval(task, model=subject, log_dir=str(inspect_home / "logs"), display="none")

    assert len(logs) == 1
    log = logs[0]
    assert log.status == "success", log.error
    assert log.location.startswith(str(inspect_home / "logs"))
    assert len(log.samples) == len(SAMPLES)

    # The grader's requests reached the server: usage counted for it, and its answers came from
    # the served model.
    usage = log.stats.model_usage
    assert set(usage) == {"openai/subject", "openai/grader"}
    for name in usage:
        assert usage[name].input_tokens > 0 and usage[name].output_tokens > 0, (name, usage[name])

    for sample in log.samples:
        score = sample.scores["model_graded_qa"]
        assert str(score.value).lower() in ("yes", "no"), score.explanation
        assert score.answer == sample.output.completion

        events = model_events(sample)
        assert [e.model for e in events] == ["openai/subject", "openai/grader"]
        for e in events:
            assert e.error is None and e.output.model == served_id
            # What Inspect sent (the body of POST /v1/chat/completions): nothing the server refuses.
            sent = e.call.request
            assert "temperature" not in sent and "n" not in sent, sent
        assert events[0].call.request["top_logprobs"] == 5 and events[0].call.request["logprobs"] is True
        assert "logprobs" not in events[1].call.request

        # The solver's log-probabilities came back: a token each, with its 5 alternatives, the
        # greedy token the most likely, and the tokens' bytes the answer.
        assert sample.output.completion
        logprobs = sample.output.choices[0].logprobs
        assert logprobs is not None and logprobs.content
        for t in logprobs.content:
            assert t.logprob <= 0 and math.isfinite(t.logprob)
            assert len(t.top_logprobs) == 5
            assert t.logprob == pytest.approx(t.top_logprobs[0].logprob)
            tops = [a.logprob for a in t.top_logprobs]
            assert tops == sorted(tops, reverse=True)
        text = b"".join(bytes(t.bytes) for t in logprobs.content).decode("utf-8", errors="replace")
        assert text == sample.output.completion

    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert 0.0 <= accuracy <= 1.0
