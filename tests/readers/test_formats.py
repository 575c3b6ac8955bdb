"""The layouts ML teams hold their data in, each read as the roles it means: JSON lines in a
.json file, CSV list columns, Arrow and save_to_disk folders (benchmarks and corpora),
header-less MMLU CSV, the original ARC JSONL and lm-evaluation-harness --log_samples."""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contam.app.core.types import Status
from contam.app.errors import InputError
from contam.app.readers.benchmark import ReadNotes, benchmark_source, iter_benchmark, read_benchmark
from contam.app.readers.corpus import find_files, read_documents
from contam.app.services.exports import without_items

FLAGGED = [s for s in Status if s.flagged]

HELLASWAG = {
    "ind": 24,
    "ctx": "A man is sitting on a roof. he",
    "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.", "starts pulling up roofing."],
    "label": "2",
}
ARC = {
    "id": "Mercury_7175875",
    "question": {
        "stem": "An astronomer observes that a planet rotates faster after a meteorite impact. Which is the most "
        "likely effect of this increase in rotation?",
        "choices": [
            {"text": "Planetary density will decrease.", "label": "A"},
            {"text": "Planetary years will become longer.", "label": "B"},
            {"text": "Planetary days will become shorter.", "label": "C"},
        ],
    },
    "answerKey": "C",
}


def _arrow_stream(rows: list[dict]) -> bytes:
    table = pa.Table.from_pylist(rows)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def _save_to_disk(folder: Path, rows: list[dict]) -> Path:
    """The layout `Dataset.save_to_disk` writes: Arrow stream data, state.json, dataset_info.json."""
    folder.mkdir(parents=True)
    (folder / "data-00000-of-00001.arrow").write_bytes(_arrow_stream(rows))
    (folder / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "x"}, indent=2)
    )
    (folder / "dataset_info.json").write_text(json.dumps({"features": {"text": {"dtype": "string"}}}, indent=2))
    return folder


def test_json_lines_in_a_json_file() -> None:
    data = "".join(json.dumps(r) + "\n" for r in (HELLASWAG, {**HELLASWAG, "ind": 25})).encode()
    items, used = read_benchmark(data, "hellaswag.json")  # what Dataset.to_json() writes
    assert len(items) == 2 and used["question"] == "ctx"


def test_csv_list_columns_are_parsed() -> None:
    """`datasets` writes list columns as Python reprs; HellaSwag from CSV once lost its endings."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, list(HELLASWAG))
    w.writeheader()
    w.writerow({**HELLASWAG, "endings": str(HELLASWAG["endings"])})
    w.writerow({**HELLASWAG, "endings": "[__import__('os').system('true')]"})  # never evaluated
    items, _ = read_benchmark(buf.getvalue().encode(), "hellaswag.csv")
    assert items[0].choices == tuple(HELLASWAG["endings"]) and items[0].answer == "starts pulling up roofing."
    assert items[1].choices == ("[__import__('os').system('true')]",)


def test_headerless_mmlu_csv() -> None:
    text = '"What is the capital of France?",Berlin,Paris,Rome,Madrid,B\n"Which is a prime number?",4,6,7,9,C\n'
    items, used = read_benchmark(text.encode(), "geography_test.csv")
    assert len(items) == 2 and used == {"question": "question", "choices": ["A", "B", "C", "D"], "answer": "answer"}
    assert items[0].question == "What is the capital of France?" and items[0].answer == "Paris"
    assert items[1].choices == ("4", "6", "7", "9") and items[1].answer == "7"


def test_a_spreadsheets_csv_is_read_with_its_own_separator_and_column_names() -> None:
    """Excel where the comma is the decimal mark writes CSV separated by semicolons, with a byte
    order mark, and names columns as people do ("Correct Answer", "Option A"): the trial's file
    read as one column ("no question field found among ['ID;Question;...']") and, saved with
    commas, its answers were never looked for. Written back (a clean subset) as it came."""
    head = ["ID", "Question", "Option A", "Option B", "Option C", "Option D", "Correct Answer"]
    rows = [["q1", "Which planet is red?", "Venus", "Mars", "Earth", "Jupiter; the giant", "B"]]
    rows += [["q2", "Which gas do plants take in?", "Oxygen", "Carbon dioxide", "Helium", "Neon", "B"]]
    for sep in (";", ","):
        text = "\ufeff" + "".join(sep.join(f'"{c}"' if sep in c else c for c in r) + "\r\n" for r in [head, *rows])
        items, used = read_benchmark(text.encode(), "quiz.csv")
        assert used == {
            "question": "Question",
            "choices": ["Option A", "Option B", "Option C", "Option D"],
            "answer": "Correct Answer",
            "id": "ID",
        }, sep
        assert [(i.item_id, i.answer) for i in items] == [("q1", "Mars"), ("q2", "Carbon dioxide")]
        assert items[0].choices[3] == "Jupiter; the giant"
        kept, _ = without_items(text.encode(), "quiz.csv", {0: "contaminated"}, FLAGGED)
        assert (
            kept.decode() == "\ufeff" + text.split("\r\n")[0].lstrip("\ufeff") + "\r\n" + text.split("\r\n")[2] + "\r\n"
        )
    one_column = "question\nIs it 3;4 or 5?\n"  # a semicolon in one column's header and cells: commas still
    assert [i.question for i in read_benchmark(one_column.encode(), "q.csv")[0]] == ["Is it 3;4 or 5?"]
    comma_named = "id;question;answer, final\nq1;Which planet is red?;Mars\n"  # a comma in a column's name (a review)
    items, used = read_benchmark(comma_named.encode(), "q.csv", {"answer": "answer, final"})
    assert used["question"] == "question" and (items[0].question, items[0].answer) == ("Which planet is red?", "Mars")
    kept, _ = without_items(comma_named.encode() + b"q2;Which gas?;CO2\n", "q.csv", {0: "contaminated"}, FLAGGED)
    assert kept == b"id;question;answer, final\nq2;Which gas?;CO2\n"
    decimal = "id;answer, final;question\n1;3,5;What is seven halves?\n"  # a decimal comma in the row (a review)
    assert read_benchmark(decimal.encode(), "q.csv")[0][0].question == "What is seven halves?"
    commas = "question,notes;misc\nWhat is 2+2?,easy\n"  # a semicolon in a comma file's header: commas
    assert read_benchmark(commas.encode(), "q.csv")[1]["question"] == "question"
    # a tab- or bar-separated export named .csv (a trial: "add a header row", which it had)
    for sep in ("\t", "|"):
        text = sep.join(head) + "\n" + "".join(sep.join(r) + "\n" for r in rows)
        items, used = read_benchmark(text.encode(), "quiz.csv")
        assert used["question"] == "Question" and [(i.item_id, i.answer) for i in items][1] == ("q2", "Carbon dioxide")
        kept, _ = without_items(text.encode(), "quiz.csv", {0: "contaminated"}, FLAGGED)
        assert kept.decode() == text.split("\n")[0] + "\n" + text.split("\n")[2] + "\n"
    tabbed = "question\tnote;x\nIs it 3;4 or 5?\tok;y\n"  # tabs split the header most
    assert read_benchmark(tabbed.encode(), "q.csv")[1]["question"] == "question"


def test_guessing_names_apart_from_case_and_spaces_takes_nothing_twice() -> None:
    """A review of the names compared with case, spaces and underscores aside: "a" and "b" (a
    sum's numbers) became choices A and B, answering the sum with a choice; "canonical solution"
    was the answer and the solution both. Single letters are taken as written, and a field one
    role took is no other's."""
    rows = [{"question": "What is 3 + 5?", "a": 3, "b": 5, "answer": 8}]
    items, used = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "sums.jsonl")
    assert used == {"question": "question", "answer": "answer"} and items[0].answer == "8"
    rows = [{"question": "Write a function that doubles x.", "canonical solution": "return 2 * x"}]
    items, used = read_benchmark("".join(json.dumps(r) + "\n" for r in rows).encode(), "code.jsonl")
    assert used == {"question": "question", "answer": "canonical solution"} and items[0].solution == ""


def test_original_arc_jsonl() -> None:
    items, used = read_benchmark((json.dumps(ARC) + "\n").encode(), "ARC-Challenge-Test.jsonl")
    it = items[0]
    assert it.question.startswith("An astronomer observes") and it.item_id == "Mercury_7175875"
    assert it.choices[2] == "Planetary days will become shorter." and it.answer == it.choices[2]
    assert used["answer"] == "answerKey"
    # the fields named by their paths in the file, as a user reading it would (a probe: refused
    # with "row 1 has no field 'question.stem'")
    mapping = {"question": "question.stem", "choices": "question.choices", "answer": "answerKey"}
    named, _ = read_benchmark((json.dumps(ARC) + "\n").encode(), "arc.jsonl", mapping)
    assert (named[0].question, named[0].choices, named[0].answer) == (it.question, it.choices, it.answer)


def test_lm_evaluation_harness_samples_check_the_prompt_the_model_saw() -> None:
    prompt = "Question: What is 2+2?\nAnswer: 4\n\nQuestion: Which river flows through Baghdad?\nAnswer:"
    mc = {
        "doc_id": 7,
        "doc": {
            "id": "q-river",
            "question": "Which river flows through Baghdad?",
            "choices": ["Nile", "Tigris"],
            "answer": 1,
        },
        "target": 1,
        "arguments": {
            "gen_args_0": {"arg_0": prompt, "arg_1": " Nile"},
            "gen_args_1": {"arg_0": prompt, "arg_1": " Tigris"},
        },
        "resps": [[[-3.2, False]], [[-0.4, True]]],
    }
    gen = {"doc_id": 8, "doc": {"question": "q"}, "target": "4", "arguments": [[prompt, {"until": ["\n"]}]]}
    data = (json.dumps(mc) + "\n" + json.dumps(gen) + "\n").encode()
    items, used = read_benchmark(data, "samples_arc.jsonl")
    assert used == {"question": "prompt", "choices": "choices", "answer": "target", "id": "id", "answer_base": "0"}
    assert items[0].question == prompt and items[0].choices == (" Nile", " Tigris") and items[0].answer == " Tigris"
    assert items[1].question == prompt and items[1].answer == "4" and items[1].item_id == "8"
    assert items[0].item_id == "q-river"  # the document's own id, not the harness's position (7)
    # few-shot examples sampled per item judged the item by them (a trial): the document's own fields can be named
    mapping = {"question": "doc.question", "choices": "doc.choices", "answer": "doc.answer"}
    items, used = read_benchmark((json.dumps(mc) + "\n").encode(), "samples_arc.jsonl", mapping)
    assert (items[0].question, items[0].choices, items[0].answer) == (
        mc["doc"]["question"],
        ("Nile", "Tigris"),
        "Tigris",
    )
    notes = ReadNotes()  # read by their prompts, few-shot records are told how to judge the item alone
    shot = "Question: Which planet is red?\nAnswer: Mars\n\nQuestion: Which gas do plants take in?\nAnswer: CO2\n\n"
    few = {**mc, "arguments": {k: {**a, "arg_0": shot + prompt} for k, a in mc["arguments"].items()}}
    list(iter_benchmark((json.dumps(few) + "\n").encode(), "samples_arc.jsonl", notes=notes))
    assert notes.said()[0].startswith("1 of 1 items are lm-evaluation-harness prompts more than twice as long")
    assert "question=doc.question, choices=doc.choices" in notes.said()[0]
    # zero-shot: MMLU's header and a short question are over twice the document, but no examples (a review)
    zero = "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
    zero += "Find the order of 4 in Z_6.\nA. 1\nB. 2\nC. 3\nD. 6\nAnswer:"
    abstract = {
        "doc_id": 1,
        "doc": {"question": "Find the order of 4 in Z_6.", "choices": ["1", "2", "3", "6"]},
        "target": 2,
    }
    abstract["arguments"] = [[zero, f" {x}"] for x in "ABCD"]
    list(iter_benchmark((json.dumps(abstract) + "\n").encode(), "samples_abstract_algebra.jsonl", notes=notes))
    assert notes.said() == []
    list(iter_benchmark((json.dumps(few) + "\n").encode(), "samples_arc.jsonl", mapping, notes=notes))
    assert notes.said() == []


def test_a_pipe_is_refused_as_one_not_called_a_folder(tmp_path: Path) -> None:
    """`contam scan /dev/stdin`, `<(...)` or a FIFO said "/dev/stdin is a folder" (a new user's
    trial): a benchmark is read more than once, so it must be a file, and the message says so."""
    os.mkfifo(fifo := tmp_path / "items.jsonl")
    with pytest.raises(
        InputError, match=r"items.jsonl is not a file but a pipe or device .*save the benchmark to a file"
    ):
        benchmark_source(fifo)


def test_arrow_file_and_save_to_disk_folder(tmp_path: Path) -> None:
    rows = [{"id": "a", "question": "What is the capital of France?", "answer": "Paris"}] * 2
    items, _ = read_benchmark(_arrow_stream(rows), "test.arrow")
    assert [i.answer for i in items] == ["Paris", "Paris"]
    folder = _save_to_disk(tmp_path / "bench" / "test", rows)
    source, name = benchmark_source(folder)
    assert name == "test.arrow" and len(list(iter_benchmark(source, name))) == 2
    (tmp_path / "bench" / "dataset_dict.json").write_text('{"splits": ["test"]}')
    with pytest.raises(InputError, match="holds several splits \\(test\\): give one"):
        benchmark_source(tmp_path / "bench")


def test_save_to_disk_folder_as_a_corpus(tmp_path: Path) -> None:
    folder = _save_to_disk(tmp_path / "corpus", [{"id": f"d{i}", "text": f"document number {i}"} for i in range(3)])
    files = find_files([folder])
    assert [f.name for f in files] == ["data-00000-of-00001.arrow"]  # state.json and dataset_info.json left out
    docs = list(read_documents(files[0], Counter()))
    assert [(d.external_id, d.text) for d in docs][2] == ("d2", "document number 2")


def test_hub_parquet_layout(tmp_path: Path) -> None:
    """A dataset downloaded from the Hub: one split's shards are joined; several splits must be
    chosen, by a file, a folder or the split's name (FOLDER/test)."""
    data = tmp_path / "mmlu" / "data"
    data.mkdir(parents=True)
    for i in range(2):
        rows = [{"question": f"Question {i} about the capital of France?", "choices": ["a", "b"], "answer": 1}]
        pq.write_table(pa.Table.from_pylist(rows), data / f"test-0000{i}-of-00002.parquet")
    source, name = benchmark_source(data)
    assert [i.question for i in iter_benchmark(source, name)][1] == "Question 1 about the capital of France?"
    pq.write_table(pa.Table.from_pylist(rows), data / "validation-00000-of-00001.parquet")
    with pytest.raises(InputError, match=r"holds several splits \(data/test, data/validation\)") as refused:
        benchmark_source(tmp_path / "mmlu")
    # one split's shards, named by the split as the refusal suggests (a new user had to move the
    # shards into a folder of their own: a scan takes one path)
    assert f"e.g. {tmp_path / 'mmlu' / 'data' / 'test'}" in str(refused.value)
    assert len(list(iter_benchmark(*benchmark_source(data / "test")))) == 2
    assert len(list(iter_benchmark(*benchmark_source(data / "validation")))) == 1
    with pytest.raises(InputError, match="no such file"):
        benchmark_source(data / "train")
    # the Hub's Parquet conversion names a split's shards 0000.parquet, 0001.parquet in the
    # split's folder: one split, not several (a review), and the refusal names a folder that works
    conv = tmp_path / "conv" / "default"
    for split, k in (("test", 0), ("test", 1), ("train", 0)):
        (conv / split).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), conv / split / f"000{k}.parquet")
    assert len(list(iter_benchmark(*benchmark_source(conv / "test")))) == 2
    with pytest.raises(
        InputError, match=r"holds several splits \(test, train\): give one file or folder, e.g. .*/test$"
    ):
        benchmark_source(conv)
    # files named by their split alone are two splits, refused, not read as one benchmark (a review:
    # train.parquet and test.parquet were joined), and the folder itself is never the example given
    named = tmp_path / "named"
    named.mkdir()
    for split in ("train", "test"):
        pq.write_table(pa.Table.from_pylist(rows), named / f"{split}.parquet")
    with pytest.raises(InputError, match=r"holds several splits \(test, train\)"):
        benchmark_source(named)
    pq.write_table(pa.Table.from_pylist(rows), named / "0000.parquet")
    with pytest.raises(InputError, match=r"holds several splits \(\., test, train\): give one file or folder$"):
        benchmark_source(named)
    assert len(list(iter_benchmark(*benchmark_source(data / "validation-00000-of-00001.parquet")))) == 1
    (data / "validation-00000-of-00001.parquet").unlink()
    (data / "dataset_infos.json").write_text("{}")  # the Hub's metadata is not a benchmark
    assert len(list(iter_benchmark(*benchmark_source(data)))) == 2
    (data / "extra.jsonl").write_text(json.dumps({"question": "another benchmark"}) + "\n")
    with pytest.raises(InputError, match=r"holds other benchmark files beside its Parquet shards \(extra.jsonl\)"):
        benchmark_source(data)  # one of them was read, silently


def test_compressed_layouts_and_their_clean_subsets() -> None:
    """The layouts are told by content, compressed too; the clean subset keeps the records as read."""
    mmlu = '"What is the capital of France?",Berlin,Paris,Rome,Madrid,B\n"Which is a prime number?",4,6,7,9,C\n'
    items, _ = read_benchmark(gzip.compress(mmlu.encode()), "geography_test.csv.gz")
    assert items[1].answer == "7"
    lines = "".join(json.dumps(r) + "\n" for r in (HELLASWAG, {**HELLASWAG, "ind": 25})).encode()
    assert len(read_benchmark(gzip.compress(lines), "hellaswag.json.gz")[0]) == 2
    data, name = without_items(gzip.compress(mmlu.encode()), "geography_test.csv.gz", {0: "contaminated"}, FLAGGED)
    assert name == "geography_test.clean-unflagged.csv" and data.decode() == "Which is a prime number?,4,6,7,9,C\n"
    rows = [{"id": "a", "question": "q one here"}, {"id": "b", "question": "q two here"}]
    data, name = without_items(_arrow_stream(rows), "test.arrow", {1: "contaminated"}, FLAGGED)
    assert name == "test.clean-unflagged.arrow" and [i.item_id for i in read_benchmark(data, name)[0]] == ["a"]
    assert pa.ipc.open_stream(data).read_all().num_rows == 1  # a stream, as it came
    sink = io.BytesIO()  # an Arrow IPC *file* comes back as a file (it came back as a stream)
    with pa.ipc.new_file(sink, pa.Table.from_pylist(rows).schema) as writer:
        writer.write_table(pa.Table.from_pylist(rows))
    data, name = without_items(sink.getvalue(), "test.arrow", {1: "contaminated"}, FLAGGED)
    assert pa.ipc.open_file(pa.BufferReader(data)).read_all().to_pylist() == rows[:1]


def test_a_clean_subset_is_the_file_less_the_dropped_records() -> None:
    """Its records were written anew from what the reader made of them: a JSON list in a CSV cell
    came back as a Python list, CRLF as LF, MMLU's header-less file with a header, a JSON object
    without its other keys, JSON lines re-encoded, and a Parquet file whose every row was dropped
    without columns (a new user's trial). Now the file is as it was, less the dropped records."""
    drop = {1: "contaminated"}
    csv_text = 'id,question,choices,answer\r\na,"Which river?","[""Nile"", ""Tigris""]",Nile\r\n'
    csv_text += 'b,"Which moon?","[""Io""]",Io\r\nc,"Which sea?","{""k"": 1}",Red\r\n'
    data, _ = without_items(csv_text.encode(), "b.csv", drop, FLAGGED)
    assert data.count(b"\r\n") == 3 and b"\n" not in data.replace(b"\r\n", b"")  # the file's line endings
    assert list(csv.reader(io.StringIO(data.decode(), newline=""))) == [
        ["id", "question", "choices", "answer"],
        ["a", "Which river?", '["Nile", "Tigris"]', "Nile"],  # each cell as the file has it
        ["c", "Which sea?", '{"k": 1}', "Red"],
    ]
    # a spreadsheet's UTF-8 byte order mark stays: without it Excel reads the text as Latin-1
    with_bom, _ = without_items(b"\xef\xbb\xbf" + csv_text.encode(), "b.csv", drop, FLAGGED)
    assert with_bom == b"\xef\xbb\xbf" + data
    jsonl = b'{"id": "a", "question": "q one here", "n": 1e5}\n\n{"id": "b", "question": "q two"}\n'
    jsonl += b'{"id": "c", "question": "q3"}'
    data, _ = without_items(jsonl, "b.jsonl", drop, FLAGGED)
    assert data == b'{"id": "a", "question": "q one here", "n": 1e5}\n{"id": "c", "question": "q3"}'
    wrapped = {"version": 2, "data": [{"id": "a", "question": "q one"}, {"id": "b", "question": "q two"}]}
    data, _ = without_items(json.dumps(wrapped).encode(), "b.json", drop, FLAGGED)
    assert json.loads(data) == {"version": 2, "data": [{"id": "a", "question": "q one"}]}
    table = pa.table({"id": ["a", "b"], "question": ["q one here", "q two here"], "n": pa.array([1, 2], pa.int16())})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    data, _ = without_items(sink.getvalue(), "b.parquet", {0: "contaminated", 1: "suspicious"}, FLAGGED)
    assert pq.read_table(io.BytesIO(data)).schema.equals(table.schema)  # no rows, the same columns and types
    data, _ = without_items(sink.getvalue(), "b.parquet", drop, FLAGGED)
    assert pq.read_table(io.BytesIO(data)).to_pylist() == [{"id": "a", "question": "q one here", "n": 1}]


def test_a_clean_subset_reads_a_file_as_the_reader_does() -> None:
    """A .json file of JSON lines with a byte order mark, or a first line over 64 KiB, was read as
    JSON lines but written back as one JSON document: a server error (the review). A file whose
    lines end in CR alone came back with CRLF; a zstd Parquet file as snappy."""
    drop = {1: "contaminated"}
    rows = [{"id": str(i), "question": f"question {i} here"} for i in range(4)]
    lines = [json.dumps(r).encode() + b"\n" for r in rows]
    data, _ = without_items(codecs.BOM_UTF8 + b"".join(lines), "b.json", drop, FLAGGED)
    assert data == codecs.BOM_UTF8 + lines[0] + lines[2] + lines[3]
    long = [json.dumps({**r, "pad": "x" * 70_000}).encode() + b"\n" for r in rows[:3]]
    assert without_items(b"".join(long), "b.json", drop, FLAGGED)[0] == long[0] + long[2]
    cr = b'question,answer\r"What is question 1, really?",a1\rq2,a2\r'
    assert without_items(cr, "b.csv", drop, FLAGGED)[0] == b'question,answer\r"What is question 1, really?",a1\r'
    sink = io.BytesIO()
    table = pa.table({"id": ["a", "b"], "question": ["q one here", "q two here"]})
    pq.write_table(table, sink, compression={"id": "gzip", "question": "zstd"})  # a codec a column
    data, _ = without_items(sink.getvalue(), "b.parquet", drop, FLAGGED)
    group = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    assert [group.column(i).compression for i in range(2)] == ["GZIP", "ZSTD"]
    # a line break inside a quoted cell is not the file's line ending (a second review)
    lf = b'"quest\rion",answer\nq0,a0\nq1,a1\nq2,a2\n'
    assert without_items(lf, "b.csv", drop, FLAGGED)[0] == b'"quest\rion",answer\nq0,a0\nq2,a2\n'
    # a lone surrogate the file holds escaped, in a JSON array: escaped again, not a server error
    rows = [{"id": "0", "question": "question 0 here", "answer": "\ud800"}, {"id": "1", "question": "question 1"}]
    data, _ = without_items(json.dumps(rows).encode(), "b.json", drop, FLAGGED)
    assert json.loads(data) == rows[:1]


def _streamed_peak(data: object, name: str) -> tuple[int, int]:
    """(items, peak bytes Python allocated) reading a benchmark item by item, keeping none."""
    import tracemalloc

    from contam.app.readers.benchmark import iter_benchmark

    tracemalloc.start()
    try:
        n = sum(1 for _ in iter_benchmark(data, name, keep_raw=False))  # type: ignore[arg-type]
        return n, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _rows(n: int) -> list[dict[str, str]]:
    return [{"id": f"q{i}", "question": f"question {i} " + "word " * 200} for i in range(n)]  # ~1 kB each


def test_a_json_array_is_read_an_item_at_a_time(tmp_path: Path) -> None:
    """A .json file holding one big array was read and parsed whole (the file's bytes and every
    record in memory at once); it is parsed an item at a time (ijson): reading a 12 MB array
    peaks at a small fraction of it."""
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_rows(12_000)))
    size = path.stat().st_size
    n, peak = _streamed_peak(path, "big.json")
    assert n == 12_000 and size > 12e6
    assert peak < 4e6, (peak, size)  # 26 MB before
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(_rows(3))[:-40])
    with pytest.raises(InputError, match="broken.json: not valid JSON after item 2"):
        _streamed_peak(broken, "broken.json")
    # broken before any item was read: said so, not "after item 0" (a new user's report)
    for text, name in (('[{"question": "a", ', "cut.json"), ('[{"question": nope}]', "bad.json"), ("[", "open.json")):
        (tmp_path / name).write_text(text)
        with pytest.raises(InputError, match="before its first item") as err:
            _streamed_peak(tmp_path / name, name)
        assert "item 0" not in str(err.value)


def test_a_json_object_holding_the_items_is_read_an_item_at_a_time(tmp_path: Path) -> None:
    """A JSON object holding the items under a key, with metadata beside them (`{"version": ..,
    "data": [...]}`), was parsed whole; it is streamed like an array, its other values skipped."""
    path = tmp_path / "wrapped.json"
    tags = [f"tag{i}" for i in range(50)]
    path.write_text(json.dumps({"version": 2, "tags": tags, "data": _rows(24_000), "meta": {"split": "test"}}))
    n, peak = _streamed_peak(path, "wrapped.json")
    assert n == 24_000 and path.stat().st_size > 24e6
    assert peak < 8e6, peak  # 52 MB before; a first line of 1 MiB is looked at for JSON lines
    first = next(iter_benchmark(path, "wrapped.json"))
    assert first.item_id == "q0" and first.question.startswith("question 0 word")
    (tmp_path / "two.json").write_text(json.dumps({"dev": _rows(2), "test": _rows(2)}))
    with pytest.raises(InputError, match="exactly one array of items .found 'dev' and 'test'"):
        list(iter_benchmark(tmp_path / "two.json", "two.json"))
    (tmp_path / "mixed.json").write_text(json.dumps({"data": [_rows(1)[0], "oops"]}))
    with pytest.raises(InputError, match="item 2 under 'data' is not a JSON object"):
        list(iter_benchmark(tmp_path / "mixed.json", "mixed.json"))
    long_lines = "\n".join(json.dumps({"id": f"q{i}", "question": "x " * 700_000}) for i in range(2))
    (tmp_path / "lines.json").write_text(long_lines)  # JSON lines whose first line is too long to tell
    with pytest.raises(InputError, match="more than one JSON value; if it holds an item a line, name the file .jsonl"):
        list(iter_benchmark(tmp_path / "lines.json", "lines.json"))


def test_a_compressed_parquet_file_is_read_a_batch_at_a_time(tmp_path: Path) -> None:
    """A .parquet.gz was decompressed into memory whole (Parquet needs to seek); it is
    decompressed to a temporary file and read from there a batch at a time."""
    rows = _rows(16_000)
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf, row_group_size=1000, compression="none")
    path = tmp_path / "big.parquet.gz"
    path.write_bytes(gzip.compress(buf.getvalue(), 1))
    n, peak = _streamed_peak(path, "big.parquet.gz")
    assert n == 16_000 and len(buf.getvalue()) > 16e6
    assert peak < 8e6, peak  # the whole file, 16 MB, before
    assert [it.item_id for it in iter_benchmark(path, "big.parquet.gz")][:3] == ["q0", "q1", "q2"]


def test_a_save_to_disk_folder_and_parquet_shards_are_read_a_batch_at_a_time(tmp_path: Path) -> None:
    """Hugging Face save_to_disk folders and folders of Parquet shards were read whole and
    joined into one Arrow stream in memory (twice the data: the tables and the stream's bytes);
    they are read a file, and a record batch, at a time, rows numbered across the files."""
    from contam.app.readers.benchmark import benchmark_source, iter_benchmark

    rows = _rows(12_000)
    arrow = tmp_path / "disk"
    arrow.mkdir()
    names = []
    for k in range(3):
        table = pa.Table.from_pylist(rows[k * 4000 : (k + 1) * 4000])
        names.append(f"data-{k:05d}-of-00003.arrow")
        with pa.OSFile(str(arrow / names[-1]), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
            for batch in table.to_batches(max_chunksize=500):
                w.write_batch(batch)
    (arrow / "state.json").write_text(json.dumps({"_data_files": [{"filename": n} for n in names]}))
    shards = tmp_path / "hub" / "data"
    shards.mkdir(parents=True)
    for k in range(3):
        pq.write_table(
            pa.Table.from_pylist(rows[k * 4000 : (k + 1) * 4000]),
            shards / f"test-{k:05d}-of-00003.parquet",
            row_group_size=500,
        )
    size = sum(len(json.dumps(r)) for r in rows)
    for folder in (arrow, tmp_path / "hub"):
        data, name = benchmark_source(folder)
        n, peak = _streamed_peak(data, name)
        assert n == 12_000 and size > 12e6 and peak < 4e6, (folder, peak, size)
        items = iter_benchmark(data, name)
        assert [next(items).item_id for _ in range(2)] == ["q0", "q1"]
        assert [it.row for it in items] == list(range(2, 12_000))  # numbered across the files
    # a broken file further on is met when reading gets there, after the first files' rows
    (arrow / names[2]).write_bytes((arrow / names[2]).read_bytes()[:5000])
    data, name = benchmark_source(arrow)
    items = iter_benchmark(data, name)
    assert next(items).item_id == "q0"
    with pytest.raises(InputError, match="data-00002-of-00003.arrow: not a readable Arrow file"):
        list(items)


def test_a_byte_order_mark_and_deep_nesting(tmp_path: Path) -> None:
    """A .json written with a UTF-8 byte order mark (Windows tools) was read before the streaming
    readers and refused after them ("not valid JSON after item 0"); it is stepped over, in
    benchmarks and corpora alike. A record nested thousands deep was a RecursionError (a 500 on
    upload); it is refused naming the limit."""
    import codecs

    from contam.app.errors import LimitError

    rows = [{"id": "a", "question": "which river flows through the old town", "text": "a document about rivers"}]
    bom = codecs.BOM_UTF8
    layouts = {
        "array.json": bom + json.dumps(rows).encode(),
        "object.json": bom + json.dumps({"version": 1, "data": rows}).encode(),
        "lines.json": bom + (json.dumps(rows[0]) + "\n" + json.dumps(rows[0]) + "\n").encode(),
        "array.json.gz": gzip.compress(bom + json.dumps(rows).encode()),
    }
    for name, data in layouts.items():
        (tmp_path / name).write_bytes(data)
        assert [it.question for it in iter_benchmark(tmp_path / name, name)][0] == rows[0]["question"], name
    corpus = tmp_path / "corpus.json"
    corpus.write_bytes(bom + json.dumps(rows).encode())
    assert [d.text for d in read_documents(corpus, Counter())] == ["a document about rivers"]
    deep = b'{"data": [{"question": "a b c d e f", "extra": ' + b"[" * 5000 + b"1" + b"]" * 5000 + b"}]}"
    (tmp_path / "deep.json").write_bytes(deep)
    with pytest.raises(LimitError, match="row 1's nesting exceeds the limit of 32 .CONTAM_MAX_JSON_DEPTH"):
        list(iter_benchmark(tmp_path / "deep.json", "deep.json"))


@pytest.mark.parametrize("layout", ["array", "object"])
def test_deep_nesting_is_refused_in_memory_proportional_to_it(tmp_path: Path, layout: str) -> None:
    """ijson's paths (a string per parse event, as long as the nesting) made a record 30,000
    deep cost about 2 GB and 1.5 s to read before its depth was checked, and a 200 KB file of
    100,000 killed the server: it is read in memory proportional to the file, then refused (a
    benchmark) or skipped and counted (a corpus, whose other records are read)."""
    import tracemalloc

    from contam.app.errors import LimitError
    from contam.app.readers.corpus import Skipped

    depth = 30_000
    nested = b"[" * depth + b"]" * depth
    record = b'{"id": "d", "question": "a b c d e f", "text": "a deep one", "x": ' + nested + b"}"
    good = b'{"id": "g", "question": "which river flows", "text": "a document about rivers"}'
    meta = b'"meta": ' + nested + b", " if layout == "object" else b""
    data = b"[" + good + b", " + record + b", " + good + b"]"
    (tmp_path / "deep.json").write_bytes(b"{" + meta + b'"data": ' + data + b"}" if layout == "object" else data)
    tracemalloc.start()
    try:
        with pytest.raises(LimitError, match="row 2's nesting exceeds the limit of 32"):
            list(iter_benchmark(tmp_path / "deep.json", "deep.json"))
        if layout == "array":  # a corpus is a JSON array or JSON lines
            skipped = Skipped()
            assert [d.external_id for d in read_documents(tmp_path / "deep.json", skipped)] == ["g", "g"]
            assert skipped == {"nested_too_deep": 1} and skipped.where == {"nested_too_deep": ["record 2"]}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak


def test_a_corpus_line_with_nan_or_too_deep_is_read_or_counted_as_such(tmp_path: Path) -> None:
    """Python's json.dumps writes NaN and Infinity by default: a line holding one in any field
    was dropped as malformed_json (orjson refuses them); it is read. A line nested deeper than
    orjson reads is counted as nested_too_deep, not as malformed."""
    from contam.app.readers.corpus import Skipped

    lines = [
        b'{"id": "a", "text": "first document", "score": NaN, "max": Infinity}',
        b'{"id": "b", "text": "second", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"id": "c", "text": "third \xe9 document"}',
        b'{"id": "d", "text": broken',
    ]
    (tmp_path / "c.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    skipped = Skipped()
    assert [d.external_id for d in read_documents(tmp_path / "c.jsonl", skipped)] == ["a", "c"]
    assert skipped == {"nested_too_deep": 1, "malformed_json": 1, "decoded_cp1252": 1}


def test_a_clean_subset_is_read_under_the_limits_it_is_given() -> None:
    """The server's limits, as when its items were read (it read under the defaults whatever the
    server allowed)."""
    from contam.app.limits import Limits

    big = "".join(json.dumps({"id": str(i), "question": f"question {i} " + "x" * 100}) + "\n" for i in range(100))
    blob = gzip.compress(big.encode())
    assert without_items(blob, "b.jsonl.gz", {0: "contaminated"}, FLAGGED)[0].count(b"\n") == 99
    with pytest.raises(InputError, match="exceeds the limit"):
        without_items(blob, "b.jsonl.gz", {0: "contaminated"}, FLAGGED, Limits(decompressed_bytes=4096))
