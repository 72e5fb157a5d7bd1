"""`readout serve` through the clients people already have: the `openai` package (chat and
completions, log-probabilities, the most likely alternatives, streaming) and
lm-evaluation-harness's own `local-completions` backend on authored144, whose log-likelihoods must
equal Readout's own lm-eval backend's within 1e-4 a request, with the same accuracy. The server is
the real binary on a free loopback port with the default model (conftest's `server`)."""

import math

import pytest

openai = pytest.importorskip("openai")

from conftest import MODEL, ROOT  # noqa: E402


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key="none", max_retries=0)


JUDGE = [
    {"role": "system", "content": "You grade support replies."},
    {"role": "user", "content": "Is this reply polite? Answer A for yes, B for no.\n\nReply: Thanks for waiting, we fixed it."},
]


def test_the_five_line_script_gets_letter_log_probabilities(client):
    # What docs/serve.md shows: the letters' log-probabilities from one chat request.
    r = client.chat.completions.create(model="judge", messages=JUDGE, max_tokens=1, logprobs=True, top_logprobs=20)
    first = r.choices[0].logprobs.content[0]
    alternatives = {t.token: t.logprob for t in first.top_logprobs}
    assert len(first.top_logprobs) == 20
    assert first.token == first.top_logprobs[0].token  # greedy
    assert list(alternatives.values()) == sorted(alternatives.values(), reverse=True)
    assert sum(math.exp(lp) for lp in alternatives.values()) <= 1.0 + 1e-6
    assert bytes(first.bytes).decode() == first.token
    assert r.usage.completion_tokens == 1 and r.usage.prompt_tokens > 20
    assert r.choices[0].finish_reason in ("length", "stop")


def test_chat_streams_the_reply_it_gives_whole(client):
    whole = client.chat.completions.create(model="judge", messages=JUDGE, max_tokens=8, temperature=0)
    stream = client.chat.completions.create(
        model="judge", messages=JUDGE, max_tokens=8, stream=True, stream_options={"include_usage": True}
    )
    pieces, usage, finish = [], None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            pieces.append(c.delta.content or "")
            finish = c.finish_reason or finish
    assert "".join(pieces) == whole.choices[0].message.content
    assert finish == whole.choices[0].finish_reason
    assert usage.completion_tokens == whole.usage.completion_tokens


def test_completions_echo_the_prompt_with_its_log_probabilities(client):
    r = client.completions.create(model="judge", prompt="The capital of France is", max_tokens=3, echo=True, logprobs=5)
    c = r.choices[0]
    lp = c.logprobs
    assert c.text.startswith("The capital of France is")
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(x is not None for x in lp.token_logprobs[1:])
    assert all(1 <= len(t) <= 5 for t in lp.top_logprobs[1:])
    assert len(lp.tokens) == r.usage.prompt_tokens + r.usage.completion_tokens
    # Offsets into the echoed text: each token starts where the text before it ends.
    assert lp.text_offset[0] == 0
    assert all(b - a == len(t) for a, b, t in zip(lp.text_offset, lp.text_offset[1:], lp.tokens))
    # Token-id prompts, several in one request, one choice each.
    r = client.completions.create(model="judge", prompt=[[504, 3575, 282], [504, 3575]], max_tokens=0, echo=True, logprobs=1)
    assert [len(c.logprobs.tokens) for c in r.choices] == [3, 2]


def test_what_readout_does_not_do_is_refused_in_openais_shape(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="judge", messages=JUDGE, max_tokens=1, temperature=0.8)
    assert e.value.body["param"] == "temperature" and "greedily" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="judge", messages=JUDGE, max_tokens=1, logprobs=True, top_logprobs=21)
    assert e.value.body["param"] == "top_logprobs"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="judge", prompt="x", max_tokens="many")
    assert e.value.body["param"] == "max_tokens"


def test_models_list_in_openais_shape(client):
    models = client.models.list()
    assert len(models.data) == 1 and models.data[0].object == "model"


def _evaluate(model, model_args, limit):
    import lm_eval
    from lm_eval.tasks import TaskManager

    return lm_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["authored144"],
        task_manager=TaskManager(include_path=str(ROOT / "examples" / "lm_eval")),
        limit=limit,
        log_samples=True,
    )


def _compare(api, own, limit, bound):
    a, b = api["samples"]["authored144"], own["samples"]["authored144"]
    assert len(a) == len(b) == limit
    by_doc = {s["doc_id"]: s for s in b}
    worst, compared = 0.0, 0
    for s in a:
        t = by_doc[s["doc_id"]]
        assert len(s["resps"]) == len(t["resps"]) == len(s["doc"]["options"])
        for (ll, greedy), (ll_own, greedy_own) in zip((r[0] for r in s["resps"]), (r[0] for r in t["resps"])):
            worst = max(worst, abs(ll - ll_own))
            assert abs(ll - ll_own) < bound, (s["doc_id"], ll, ll_own)
            assert bool(greedy) == bool(greedy_own)
            compared += 1
        assert s["acc"] == t["acc"]
    assert compared == 3 * limit
    assert api["results"]["authored144"]["acc,none"] == own["results"]["authored144"]["acc,none"]
    return worst


def _local_completions(base, limit):
    return _evaluate(
        "local-completions",
        {
            "base_url": base + "/v1/completions",
            "model": "judge",
            # The harness tokenizes through the server (vLLM's routes): nothing downloaded.
            "tokenizer_backend": "remote",
            "tokenized_requests": True,
            "batch_size": 16,
            "num_concurrent": 1,
            "max_retries": 1,
        },
        limit,
    )


@pytest.fixture
def harness(monkeypatch):
    pytest.importorskip("lm_eval")
    import lm_eval.models.openai_completions  # noqa: F401  (registers local-completions)
    import readout.lm_eval  # noqa: F401  (registers --model readout)

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_lm_eval_local_completions_gives_readouts_own_numbers(exact_server, harness):
    # With attention as the kernel, a request's numbers do not depend on how the harness
    # batches: its stock OpenAI backend and Readout's own agree within 1e-4 a request.
    limit = 24
    api = _local_completions(exact_server, limit)
    own = _evaluate("readout", {"model": str(MODEL), "device": "cpu", "attention": "kernel"}, limit)
    _compare(api, own, limit, 1e-4)


def test_lm_eval_local_completions_at_the_defaults_gives_the_same_accuracy(server, harness):
    # At the defaults (attention as matmuls) a request's numbers move with what shares its pass
    # by the matmuls' blocking and the f16 cache's rounding: within 0.02 nats here
    # (docs/serve.md gives the measured spread), the same answers.
    limit = 24
    api = _local_completions(server, limit)
    own = _evaluate("readout", {"model": str(MODEL), "device": "cpu"}, limit)
    _compare(api, own, limit, 0.02)
