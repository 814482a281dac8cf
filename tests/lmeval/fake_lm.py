"""A weightless model for the real lm-evaluation-harness, and local tasks for it.

Importing this module registers the model ``benchsel-fake`` in lm-eval's own
registry (``lm_eval.api.registry.register_model``); ``run.py`` imports it in
the subprocess before calling lm-eval's CLI, so ``--model benchsel-fake`` works.

How the model knows the right answer
------------------------------------
Every question of the tasks written here is an addition, and the prompt
carries the question id::

    Question 17: What is 23 + 45?
    Answer:

The model parses the last ``Question <id>: What is <a> + <b>?`` in the context
and computes ``a + b``. In a multiple-choice task a continuation (``" 68"``) is
the right one iff its number equals ``a + b``; in a generate task the model
writes ``a + b`` or a wrong number. Nothing else is needed from lm-eval: the
harness passes the context and continuation strings through unchanged. On a
prompt without that pattern the model answers at random (deterministically).

Behaviour (``--model_args``)
----------------------------
``pretrained=<name>``
    The model's name. lm-eval takes the output sub-folder name from this key
    (``OUT/<sanitized name>/``), so always give it; ``name=<str>`` overrides the
    seed only. Avoid purely numeric names (lm-eval casts them to numbers).
``skill=<float>`` (default 0)
    Whether the model answers question ``c`` (its context string) right is
    deterministic: right iff ``u(name, c) < sigmoid(disc * (skill - d(c)))``
    with ``d(c) = spread * Phi^-1(u("difficulty", c))`` a per-question
    difficulty shared by all models (so answers are correlated across models)
    and ``u`` a uniform number from a SHA-256 hash. ``disc`` (default 1.5) and
    ``spread`` (default 1) are model args too.
``format=<float>`` (default 0.7)
    Generate tasks: the probability (hash draw per model and question) that the
    answer is written as ``#### <n>``; otherwise it is written as ``... is <n>.``.
    A strict filter (``#### (-?[0-9]+)``) then finds nothing (``[invalid]``)
    where a flexible one (last number) finds ``<n>``.
``replay=<path.npz>,row=<int>``
    Answer question ``q`` (the id in the prompt) right iff
    ``numpy.load(path)['scores'][row, q] == 1``; used with
    :func:`write_replay_task`, whose doc ``q`` is column ``q`` of the matrix.
    ``skill`` is then ignored.

Multiple choice: the right continuation gets loglikelihood ``-0.5`` when the
model is right and ``-10`` when it is wrong; every other continuation gets
``-2 - h`` with ``h`` in [0, 1) hashed from (name, context, continuation), so
the wrong pick is deterministic and there are no ties. ``loglikelihood_rolling``
is not supported.

Tasks
-----
:func:`write_tasks` writes ``bs_mc_a`` and ``bs_mc_b`` (multiple choice,
``acc``), ``bs_gen`` (``generate_until``, ``exact_match`` under two filters,
``strict`` and ``flex``) and the group ``bs_group`` (bs_mc_a + bs_mc_b with an
aggregate ``acc``). :func:`write_replay_task` writes a multiple-choice task
with one doc per column of an npz ``scores`` matrix. Data are JSONL files
loaded with ``dataset_path: json`` and absolute ``data_files`` paths (the
``datasets`` library resolves relative ones against the working directory,
not the YAML).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from statistics import NormalDist

import numpy as np
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

MODEL_NAME = "benchsel-fake"
MC_TASKS = {"bs_mc_a": 40, "bs_mc_b": 30}
GEN_TASK = "bs_gen"
GEN_DOCS = 30
GROUP = "bs_group"
TASKS = (*MC_TASKS, GEN_TASK)  # leaf tasks
GEN_FILTERS = ("strict", "flex")

_QUESTION = re.compile(r"Question (\d+): What is (-?\d+) \+ (-?\d+)\?")
_NUMBER = re.compile(r"-?\d+")
_NORMAL = NormalDist()


def uniform(*parts: object) -> float:
    """A number in (0, 1) from the SHA-256 of the parts; the same parts, the same number."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64


def parse_question(context: str) -> tuple[int, int] | None:
    """``(question id, right answer)`` of the last question in ``context``, if any."""
    found = _QUESTION.findall(context)
    if not found:
        return None
    q, a, b = found[-1]
    return int(q), int(a) + int(b)


@register_model(MODEL_NAME)
class FakeLM(LM):
    """Weightless model; see the module docstring for its behaviour."""

    def __init__(
        self,
        pretrained: object = None,
        name: object = None,
        skill: float = 0.0,
        disc: float = 1.5,
        spread: float = 1.0,
        format: float = 0.7,  # noqa: A002 - the model arg's name
        replay: str | None = None,
        row: int | None = None,
        **_ignored: object,  # batch_size, max_batch_size, device, trust_remote_code ...
    ) -> None:
        super().__init__()
        seed = name if name is not None else pretrained
        self.name = str(seed) if seed is not None else "benchsel-fake"
        self.skill = float(skill)
        self.disc = float(disc)
        self.spread = float(spread)
        self.format = float(format)
        self.replay_row = None
        if replay is not None:
            if row is None:
                raise ValueError("replay= needs row=")
            scores = np.load(str(replay), allow_pickle=False)["scores"]
            self.replay_row = np.asarray(scores, dtype=float)[int(row)]

    # -- the rule ---------------------------------------------------------------

    def difficulty(self, context: str) -> float:
        return self.spread * _NORMAL.inv_cdf(uniform("difficulty", context))

    def p_right(self, context: str) -> float:
        return 1.0 / (1.0 + math.exp(-self.disc * (self.skill - self.difficulty(context))))

    def is_right(self, context: str, question: int | None) -> bool:
        if self.replay_row is not None:
            if question is None or not 0 <= question < self.replay_row.size:
                return False
            return bool(self.replay_row[question] == 1.0)
        return uniform(self.name, "right", context) < self.p_right(context)

    # -- lm-eval's interface ----------------------------------------------------

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        out = []
        for req in requests:
            context, continuation = req.args
            parsed = parse_question(context)
            noise = uniform(self.name, "ll", context, continuation)
            if parsed is None:
                out.append((-2.0 - noise, False))
                continue
            q, answer = parsed
            numbers = _NUMBER.findall(continuation)
            if numbers and int(numbers[0]) == answer:
                right = self.is_right(context, q)
                out.append((-0.5, True) if right else (-10.0, False))
            else:
                out.append((-2.0 - noise, False))
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("benchsel-fake has no loglikelihood_rolling")

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        for req in requests:
            context, gen_kwargs = req.args
            parsed = parse_question(context)
            if parsed is None:
                value = int(uniform(self.name, "gen", context) * 1000)
            else:
                q, answer = parsed
                if self.is_right(context, q):
                    value = answer
                else:
                    value = answer + 1 + int(uniform(self.name, "wrong", context) * 9)
            if uniform(self.name, "format", context) < self.format:
                text = f" Adding up gives {value}.\n#### {value}"
            else:
                text = f" The sum is {value}."
            for stop in (gen_kwargs or {}).get("until") or []:
                if stop and stop in text:
                    text = text[: text.index(stop)]
            out.append(text)
        return out

    def get_model_info(self) -> dict:
        return {"benchsel_fake": {"name": self.name, "skill": self.skill,
                                  "replay": self.replay_row is not None}}


# -- tasks --------------------------------------------------------------------


def _questions(task: str, n: int) -> list[dict]:
    rng = np.random.default_rng(int(hashlib.sha256(task.encode()).hexdigest()[:8], 16))
    docs = []
    for q in range(n):
        a, b = (int(x) for x in rng.integers(10, 100, size=2))
        answer = a + b
        wrong = rng.choice([d for d in range(-9, 10) if d != 0], size=3, replace=False)
        choices = [answer, *(answer + int(d) for d in wrong)]
        order = rng.permutation(4)
        choices = [str(choices[i]) for i in order]
        docs.append({"id": q, "a": a, "b": b, "answer": str(answer),
                     "choices": choices, "label": int(np.flatnonzero(order == 0)[0])})
    return docs


def _write_jsonl(path: Path, docs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")


def _yaml(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _data_lines(data: Path) -> list[str]:
    return [
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {json.dumps(str(data.resolve()))}",
        "test_split: test",
        'doc_to_text: "Question {{id}}: What is {{a}} + {{b}}?\\nAnswer:"',
    ]


def _mc_yaml(path: Path, task: str, data: Path) -> None:
    _yaml(path, [
        f"task: {task}",
        *_data_lines(data),
        "output_type: multiple_choice",
        'doc_to_choice: "{{choices}}"',
        'doc_to_target: "{{label}}"',
        "metric_list:",
        "  - metric: acc",
        "    aggregation: mean",
        "    higher_is_better: true",
        "metadata:",
        "  version: 1.0",
    ])


def write_tasks(folder, n_questions: int | dict[str, int] | None = None) -> Path:
    """Write the task YAMLs and JSONL data of bs_mc_a, bs_mc_b, bs_gen, bs_group.

    ``n_questions`` is the number of docs of every leaf task, or a mapping from
    leaf task names to it (defaults: bs_mc_a 40, bs_mc_b 30, bs_gen 30). The
    same arguments write the same files. Returns the folder (for ``--include_path``).
    """
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(n_questions, int):
        n_questions = dict.fromkeys(TASKS, n_questions)
    sizes = {**MC_TASKS, GEN_TASK: GEN_DOCS, **(n_questions or {})}
    for task in MC_TASKS:
        data = folder / "data" / f"{task}.jsonl"
        _write_jsonl(data, _questions(task, sizes[task]))
        _mc_yaml(folder / f"{task}.yaml", task, data)
    data = folder / "data" / f"{GEN_TASK}.jsonl"
    _write_jsonl(data, _questions(GEN_TASK, sizes[GEN_TASK]))
    _yaml(folder / f"{GEN_TASK}.yaml", [
        f"task: {GEN_TASK}",
        *_data_lines(data),
        "output_type: generate_until",
        'doc_to_target: "{{answer}}"',
        "generation_kwargs:",
        "  until:",
        '    - "Question"',
        "  do_sample: false",
        "metric_list:",
        "  - metric: exact_match",
        "    aggregation: mean",
        "    higher_is_better: true",
        "filter_list:",
        f"  - name: {GEN_FILTERS[0]}",
        "    filter:",
        "      - function: regex",
        "        regex_pattern: '#### (-?[0-9]+)'",
        "      - function: take_first",
        f"  - name: {GEN_FILTERS[1]}",
        "    filter:",
        "      - function: regex",
        "        regex_pattern: '(-?[0-9]+)'",
        "        group_select: -1",
        "      - function: take_first",
        "metadata:",
        "  version: 1.0",
    ])
    _yaml(folder / f"{GROUP}.yaml", [
        f"group: {GROUP}",
        "task:",
        *(f"  - {t}" for t in MC_TASKS),
        "aggregate_metric_list:",
        "  - metric: acc",
        "    aggregation: mean",
        "    weight_by_size: true",
        "metadata:",
        "  version: 1.0",
    ])
    return folder


def write_replay_task(folder, npz_path, task_name: str) -> Path:
    """Write a multiple-choice task with one doc per column of ``npz['scores']``.

    Doc ``q`` (lm-eval's ``doc_id``) is column ``q`` and its prompt says
    ``Question q:``, so ``--model_args replay=<npz_path>,row=<i>`` reproduces
    row ``i`` (``acc`` 1 iff the score is 1). Returns the YAML's path.
    """
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    n = int(np.load(str(npz_path), allow_pickle=False)["scores"].shape[1])
    data = folder / "data" / f"{task_name}.jsonl"
    _write_jsonl(data, _questions(task_name, n))
    path = folder / f"{task_name}.yaml"
    _mc_yaml(path, task_name, data)
    return path
