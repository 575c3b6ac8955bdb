"""`import contam`: the README's Python example runs as written, and the facade's parts work."""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
import warnings
from pathlib import Path

import pytest
from conftest import IndexCorpus

import contam
from contam.app.core.config import SignatureConfig

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the example's mkdtemp() folder goes with tmp_path
    exec(compile(blocks[0], "README.md", "exec"), {})
    assert [p.name for p in tmp_path.iterdir()], "the example made no temporary folder"
    out = capsys.readouterr().out
    assert "0 contaminated" in out and "contaminated share: 50%" in out


def test_index_facade(db_url: str, tmp_path: Path) -> None:
    q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "body": f"Quiz: {q}"}) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"id": "a", "question": q}) + "\n")
    with contam.Index(db_url) as index:
        assert index.add("web", [tmp_path / "c.jsonl"], text_field="body").as_dict()["documents"] == 1
        assert index.corpora() == ["web"]
        item = contam.BenchmarkItem("x", 0, question=q)
        assert index.scan([item], corpora=["web"]).results[0].score.status == "contaminated"
        result = index.scan_file(tmp_path / "b.jsonl", thresholds=contam.Thresholds(longest_match=20))
        assert result.mapping["question"] == "question" and result.thresholds.longest_match == 20
        (tmp_path / "d.jsonl").write_text(2 * (json.dumps({"id": "a", "question": q}) + "\n"))
        with pytest.warns(UserWarning, match=r"1 item\(s\) share an id with an earlier item \('a'\)"):
            assert index.scan_file(tmp_path / "d.jsonl").summary["notes"]
        index.delete("web")
        # in the Python API's terms: it sent a notebook's user to the command line (a trial)
        with pytest.raises(contam.ContamError, match=r"no corpus is indexed yet: add one first with Index\.add"):
            index.scan([q])
        with pytest.raises(contam.ContamError, match=r"no corpus is indexed yet: add one first with Index\.add"):
            index.scan_file(tmp_path / "b.jsonl")
        # a file that gives no documents is never silent: it returned quietly with 0 documents
        with pytest.raises(contam.FilesFailed, match=r"1 of 1 corpus file\(s\) failed: .*no field 'text'") as failed:
            index.add("web", [tmp_path / "c.jsonl"])
        assert failed.value.summary.as_dict()["files_failed"] == 1
        assert "choose the text field with Index.add(text_field=...)" in failed.value.message
        summary = index.add("web", [tmp_path / "c.jsonl"], strict=False)
        assert [f.status for f in summary.files] == ["failed"] and "fields seen: id, body" in str(
            summary.failed[0].error
        )


def test_index_add_checks_the_executor(tmp_path: Path) -> None:
    """The API refuses what the CLI refuses, with the same words, before any work: an unknown
    executor, a Ray address without Ray, Ray on SQLite (its workers cannot open the file)."""
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": "a b c d e f g"}) + "\n")
    with contam.Index(f"sqlite:///{tmp_path / 'c.db'}") as index:
        with pytest.raises(contam.ContamError, match="--executor must be local or ray, not 'dask'"):
            index.add("web", [tmp_path / "c.jsonl"], executor="dask")
        with pytest.raises(contam.ContamError, match="--address is the Ray cluster's"):
            index.add("web", [tmp_path / "c.jsonl"], address="head:6379")
        with pytest.raises(contam.ContamError, match="--executor ray needs a PostgreSQL database"):
            index.add("web", [tmp_path / "c.jsonl"], executor="ray")
        assert index.corpora() == []


def test_an_answer_may_be_an_index_into_the_choices() -> None:
    """README: an answer can be an index into the choices; /check refused an int, and the Python
    API scored the digit as the answer's text."""
    from contam import as_item
    from contam.app.api.schemas import CheckRequest

    assert as_item(0, {"question": "2+2?", "choices": ["3", "4"], "answer": 1}).answer == "4"
    assert as_item(0, {"question": "2+1?", "choices": ["3", "4"], "answer": 0}).answer == "3"
    assert as_item(0, {"question": "Capital?", "choices": ["Rome", "Paris"], "answer": "Paris"}).answer == "Paris"
    body = CheckRequest.model_validate({"items": [{"question": "2+2?", "choices": ["3", "4"], "answer": 1}]})
    assert body.benchmark_items()[0].answer == "4"
    # a DataFrame's numpy integer is an index too (it was the text "1"); one outside the choices
    # (-1, an unlabelled test item) is no answer
    import numpy as np

    assert as_item(0, {"question": "2+2?", "choices": ["3", "4"], "answer": np.int64(1)}).answer == "4"
    assert as_item(0, {"question": "2+2?", "choices": ["3", "4"], "answer": -1}).answer == ""


def test_a_mapping_items_choices_may_be_one_text_or_an_array() -> None:
    """A string of choices was one choice a character (a review); a numpy array is a list."""
    import numpy as np

    from contam import as_item

    assert as_item(0, {"question": "Pick", "choices": "(A) red (B) blue"}).choices == ("(A) red (B) blue",)
    assert as_item(0, {"question": "Pick", "choices": np.array(["red", "blue"]), "answer": 1}).answer == "blue"
    with pytest.raises(contam.ContamError, match="item 3: choices must be a list of texts, got dict"):
        as_item(3, {"question": "Pick", "choices": {"a": "red"}})
    # an ARC row as the hub gives it: told where its layout is read (a trial)
    arc = {"question": "Pick", "choices": {"text": ["red", "blue"], "label": ["A", "B"]}}
    with pytest.raises(contam.ContamError, match=r"got dict \(a dataset's own layout, such as ARC's .*scan_file"):
        as_item(0, arc)
    assert as_item(0, {"question": "Pick", "choices": b"red"}).choices == ("red",)  # not its byte values
    with pytest.raises(contam.ContamError, match="item 1: choices must be a list of texts, got ndarray"):
        as_item(1, {"question": "Pick", "choices": np.array("red")})
    # a missing choice (None, a frame's NaN) is the empty text in its place, as a file's null is: it
    # was the choice "None" (or "nan"), text a page could hold, and the answer's index still counts it
    missing = as_item(0, {"question": "Pick", "choices": ["red", None, float("nan"), "blue"], "answer": 3})
    assert missing.choices == ("red", "", "", "blue") and missing.answer == "blue"


def test_a_mapping_item_keeps_its_worked_solution() -> None:
    from contam import as_item

    it = as_item(0, {"question": "What is 2+2?", "answer": "4", "solution": "Two and two make four."})
    assert it.solution == "Two and two make four." and it.answer == "4"


def test_files_failed_survives_a_worker_pool(tmp_path: Path) -> None:
    """Index.add run in a worker process hands its error back pickled: FilesFailed could not be
    rebuilt from (message, detail), and the summary was lost."""
    import copy
    import pickle

    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "body": "a b c d e f g"}) + "\n")
    with contam.Index(f"sqlite:///{tmp_path / 'c.db'}") as index, pytest.raises(contam.FilesFailed) as failed:
        index.add("web", [tmp_path / "c.jsonl"])
    again = pickle.loads(pickle.dumps(failed.value))
    assert again.message == failed.value.message and again.summary.as_dict()["files_failed"] == 1
    assert copy.copy(failed.value).summary is failed.value.summary


def test_a_mapping_with_a_misspelt_field_is_refused_and_other_keys_are_named(db_url: str, tmp_path: Path) -> None:
    """A misspelt key ("choises", "Answer") was dropped without a word, and the item scored
    without its choices or answer (a new user's trial): refused, naming the field meant. A
    dataset's own keys ("subject", "idx") are not read, as before (a review: refusing them broke
    MMLU rows passed as they are), and a warning names them, a passage under "context" too."""
    from contam import as_item

    with pytest.raises(contam.ContamError, match=r"item 2: 'choises' \(did you mean 'choices'\?\), 'anwser'"):
        as_item(2, {"question": "Pick", "choises": ["red", "blue"], "anwser": 1})
    with pytest.raises(contam.ContamError, match=r"'Answer' \(did you mean 'answer'\?\) is not a field.*scan_file"):
        as_item(0, {"question": "Who?", "Answer": "Tom"})
    # a row with none of an item's text fields (a chat) was an empty item, too_short, beside a
    # warning, where the REST check refuses it (a new user's trial): refused, saying what reads it
    chat = {"id": "c1", "messages": [{"role": "user", "content": "Which river flows through Baghdad?"}]}
    with pytest.raises(contam.ContamError, match=r"item 3: none of its keys .* \(its keys: id, messages;.*scan_file"):
        as_item(3, chat)
    assert as_item(0, {"id": "x", "answer": "Tigris"}).answer == "Tigris"  # one text field is enough
    with pytest.raises(contam.ContamError, match="item 1: a text, a mapping or a BenchmarkItem, not int"):
        as_item(1, 7)  # type: ignore[arg-type]
    mmlu = {"question": "Which arch?", "subject": "anatomy", "idx": 3, "choices": ["1st", "2nd"], "answer": 1}
    assert as_item(0, mmlu).answer == "2nd"
    # every field the REST check takes is taken, accepted answers too
    it = as_item(0, {"id": "q1", "question": "Is the sky blue?", "answer": "yes", "alternatives": ["true", "Yes"]})
    assert it.item_id == "q1" and it.alternatives == ("true", "Yes")
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": "Quiz: which arch? the second"}) + "\n")
    with contam.Index(db_url) as index:
        index.add("docs", [tmp_path / "c.jsonl"])
        with pytest.warns(UserWarning, match=r"keys no item has were not read: context, idx, subject"):
            index.scan([mmlu, {"question": "Who?", "context": "A passage."}])


def test_one_name_path_or_a_mapping_of_thresholds_is_taken_as_meant(db_url: str, tmp_path: Path) -> None:
    """A corpus name given alone was read a character at a time ("no corpus named 'c', 'd', 'o',
    's'"), as was one path ("no such file or directory: c"), and thresholds given as a mapping, as
    the CLI and the API take them, failed with an AttributeError (a new user's trial)."""
    q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": f"Quiz: {q}"}) + "\n")
    with contam.Index(db_url) as index:
        assert index.add("docs", str(tmp_path / "c.jsonl")).as_dict()["documents"] == 1
        assert index.add("docs", tmp_path / "c.jsonl").as_dict()["files_unchanged"] == 1
        result = index.scan([q], corpora="docs", thresholds={"longest_match": 20})
        assert result.results[0].score.status == "contaminated" and result.thresholds.longest_match == 20
        with pytest.raises(contam.ContamError, match=r"thresholds: unknown threshold 'longest' \(did you mean"):
            index.scan([q], thresholds={"longest": 20})
        with pytest.raises(contam.ContamError, match="thresholds: a Thresholds or a mapping"):
            index.scan([q], thresholds=20)  # type: ignore[arg-type]


def test_index_refuses_a_path_for_a_url(tmp_path: Path) -> None:
    """A file's path where a URL belongs is a ContamError saying what to give, as `contam corpora
    --db PATH` says it: Index() raised SQLAlchemy's ArgumentError, and `contam db upgrade` exited 3."""
    with pytest.raises(contam.ContamError, match=r"not a database URL: .* \(use sqlite:///PATH"):
        contam.Index(str(tmp_path / "contam.db"))
    assert not list(tmp_path.iterdir())


def test_a_mapping_items_final_answer_is_read_as_the_rest_check_reads_it() -> None:
    """GSM8K's "...\\n#### 72" given to Index.scan was all answer, where /api/v1/check and a file's
    reader take 72 as the answer beside its worked solution: the same item scored otherwise (a
    trial: a page with the question alone was `suspicious` from Python, `contaminated` from the file)."""
    from contam import as_item
    from contam.app.api.schemas import CheckRequest

    given = {"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3 + 4 = 7\n#### 7"}
    it = as_item(0, given)
    assert (it.answer, it.solution) == ("7", "3 + 4 = 7")
    assert it == CheckRequest.model_validate({"items": [given]}).benchmark_items()[0]
    # other accepted answers as the REST check keeps them: once each, apart from the answer
    it = as_item(
        0, {"question": "Capital of France?", "answer": "Paris", "alternatives": ["Paris", " Lutetia", "Lutetia"]}
    )
    assert it.alternatives == ("Lutetia",)


class _Frame:
    """What Index.scan reads of a pandas DataFrame: iterating it gives its column names."""

    def __init__(self, rows: list[dict[str, object]]) -> None:
        self.rows, self.columns = rows, list(rows[0])

    def __iter__(self) -> object:
        return iter(self.columns)

    def to_dict(self, orient: str) -> list[dict[str, object]]:
        assert orient == "records"
        return self.rows


class _PolarsFrame(_Frame):
    """What Index.scan reads of a polars DataFrame: its to_dict takes no orient (a TypeError)."""

    def to_dict(self, *, as_series: bool = True) -> dict[str, list[object]]:  # type: ignore[override]
        return {c: [r.get(c) for r in self.rows] for c in self.columns}

    def iter_rows(self, *, named: bool = False) -> object:
        assert named
        return iter(self.rows)


def test_a_data_frame_is_scanned_row_by_row_and_its_nan_is_no_text(db_url: str, tmp_path: Path) -> None:
    """Index.scan(df) scored the frame's column names, each a too_short question, without a word,
    and a row's missing value (NaN in `df.to_dict("records")`) was the text "nan" (a trial)."""
    import numpy as np

    from contam import as_item

    row = {"id": "r1", "question": "Who?", "answer": float("nan"), "solution": np.float64("nan"), "passage": None}
    it = as_item(0, row)
    assert (it.item_id, it.answer, it.solution, it.passage) == ("r1", "", "", "")
    assert as_item(0, {"id": float("nan"), "question": "Who?"}).item_id == "0"
    q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": f"Quiz: {q} Answer: the Tigris."}) + "\n")
    with contam.Index(db_url) as index:
        index.add("web", [tmp_path / "c.jsonl"])
        rows: list[dict[str, object]] = [{"id": "a", "question": q, "answer": "the Tigris"}]
        rows.append({"id": "b", "question": "Who?"})
        result = index.scan(_Frame(rows))
        again = index.scan(_PolarsFrame(rows))  # polars: it raised to_dict()'s TypeError
    assert [(r.item.item_id, r.score.status) for r in result.results] == [("a", "contaminated"), ("b", "too_short")]
    assert [r.as_dict() for r in again.results] == [r.as_dict() for r in result.results]


def test_an_answer_naming_no_choice_is_warned_of(db_url: str, tmp_path: Path) -> None:
    """An answer index past the choices (7 of 4, or 1-based 4 of 4) was scored as no answer without
    a word from Index.scan, where Index.scan_file warns of it (a trial)."""
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": "Quiz: which colour is the sky?"}) + "\n")
    items = [
        {"question": "Which colour is the sky?", "choices": ["red", "blue", "green", "pink"], "answer": 4},
        {"question": "Which colour is grass?", "choices": ["red", "blue", "green", "pink"], "answer": 2},
    ]
    with contam.Index(db_url) as index:
        index.add("web", [tmp_path / "c.jsonl"])
        with pytest.warns(UserWarning, match=r"1 item\(s\) give an answer that names none.*\(item 0: 4 with 4 choices"):
            result = index.scan(items)
    assert [r.item.answer for r in result.results] == ["", "green"]


def test_scan_file_scores_in_worker_processes_as_the_cli_does(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Index.scan_file scored in the caller's process alone, where `contam scan` uses one process
    per core (a trial): `workers` as the CLI's (None: CONTAM_SCAN_WORKERS), the same results."""
    import numpy as np

    from contam.app.services import scanning

    started: list[int] = []

    class Counted(scanning.ProcessPoolExecutor):  # type: ignore[misc]
        def __init__(self, workers: int, *args: object, **kwargs: object) -> None:
            started.append(workers)
            super().__init__(workers, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scanning, "ProcessPoolExecutor", Counted)
    q = "Which river flows through the ancient city of Baghdad and joins the Euphrates near Basra?"
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": f"Quiz: {q}"}) + "\n")
    asks = "asks what number comes after it when counting up"
    rows = [{"id": f"n{i}", "question": f"Item {i} {asks}."} for i in range(1100)]
    rows[700]["question"] = q
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with contam.Index(db_url) as index:
        index.add("web", [tmp_path / "c.jsonl"])
        alone = index.scan_file(tmp_path / "b.jsonl", workers=1)
        assert started == []
        both = index.scan_file(tmp_path / "b.jsonl", workers=2)
        assert started == [2]
        monkeypatch.setenv("CONTAM_SCAN_WORKERS", "2")
        from contam.app.settings import get_settings

        get_settings.cache_clear()
        try:
            index.scan_file(tmp_path / "b.jsonl")
        finally:
            get_settings.cache_clear()
        assert started == [2, 2]
        for wrong in (-1, True, 2.0, "2"):
            with pytest.raises(contam.ContamError, match="workers must be a whole number, 0 or more"):
                index.scan_file(tmp_path / "b.jsonl", workers=wrong)  # type: ignore[arg-type]
        # a whole number numpy gives (os.cpu_count() // np.int64(2)) was refused as no whole number
        index.scan_file(tmp_path / "b.jsonl", workers=np.int64(2))  # type: ignore[arg-type]
        assert started == [2, 2, 2]
    assert [r.as_dict() for r in both.results] == [r.as_dict() for r in alone.results]
    # the items of Index.scan are the caller's own memory: no server's per-request bound (a 5,000-row
    # frame was refused, "upload a benchmark for more")
    monkeypatch.setenv("CONTAM_MAX_CHECK_ITEMS", "1000")
    with contam.Index(db_url) as index:
        scanned = index.scan(rows)
    assert len(scanned.results) == 1100 and [r.score.status for r in scanned.results][700] == "contaminated"
    assert [r.score.status for r in both.results].count("contaminated") == 1


def test_a_whole_float_answer_is_the_index_it_names() -> None:
    """A DataFrame's answer column with a missing value is float64: its 2.0 of three choices was
    the answer text "2.0" (no choice, no warning), where /api/v1/check reads 2.0 as the index 2."""
    import numpy as np

    from contam import as_item
    from contam.app.api.schemas import CheckRequest

    three = {"question": "Pick", "choices": ["x", "y", "z"], "answer": 2.0}
    for given in (three, {"question": "Sum?", "answer": 72.0}):
        assert as_item(0, given) == CheckRequest.model_validate({"items": [given]}).benchmark_items()[0]
    assert as_item(0, {"question": "Pick", "choices": ["x", "y"], "answer": np.float32(1)}).answer == "y"
    assert as_item(0, {"question": "Sum?", "answer": 2.5}).answer == "2.5"  # a fraction stays as given


def test_an_unlabelled_answer_is_warned_of_as_scan_file_does(db_url: str, tmp_path: Path) -> None:
    """A test split's answer -1 (Hugging Face: the label is withheld) was warned of by Index.scan as
    an answer naming none of the choices, "an index counts from 0", where Index.scan_file says what
    it is: a user was sent looking for a wrong answer base the data does not have."""
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p", "text": "Quiz: which colour is the sky?"}) + "\n")
    choices = ["red", "blue", "green", "pink"]
    items = [
        {"question": "Which colour is the sky?", "choices": choices, "answer": -1},
        {"question": "Which colour is grass?", "choices": choices, "answer": -1.0},  # a DataFrame's, beside a NaN
        {"question": "Which colour is snow?", "choices": choices, "answer": 2},
    ]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(it) + "\n" for it in items))
    with contam.Index(db_url) as index:
        index.add("web", [tmp_path / "c.jsonl"])
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            result = index.scan(items)
            index.scan_file(tmp_path / "b.jsonl")
    assert [r.item.answer for r in result.results] == ["", "", "green"]
    told = [str(w.message) for w in said]
    withheld = "item(s) have the answer -1 (a test item whose label is withheld): scored as items without an answer"
    assert told[0] == f"2 {withheld}"
    assert told[1] == f"1 {withheld}"  # scan_file's (its -1.0 is read as text)
    assert len(told) == 2


def test_an_index_of_another_release_is_refused_in_python_terms(
    migrated_url: str, tmp_path: Path, index_corpus: IndexCorpus
) -> None:
    """The way out of an index an earlier release made (another tokeniser) named `contam corpora
    delete` and `contam index` to a notebook's user (a review)."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "p", "text": "Which river flows through Baghdad and on to Basra?"}) + "\n")
    index_corpus(migrated_url, [corpus], "old", cfg=dataclasses.replace(SignatureConfig(), normalizer_version="2"))
    with contam.Index(migrated_url) as index, pytest.raises(contam.ContamError) as refused:
        index.scan(["Which river flows through Baghdad and on to Basra?"])
    assert "cannot reproduce" in refused.value.message and "contam index" not in refused.value.message
    assert "(Index.delete('old'), then Index.add('old', paths))" in refused.value.message, refused.value.message
    # beside a corpus it can check, the one left out is said in the same terms
    index_corpus(migrated_url, [corpus], "web")
    with contam.Index(migrated_url) as index, pytest.warns(UserWarning) as said:
        index.scan(["Which river flows through Baghdad and on to Basra?"])
    told = "left out (indexed by another release of contam: Index.delete(NAME), then Index.add(NAME, paths) again): old"
    assert told in [str(w.message) for w in said], [str(w.message) for w in said]
