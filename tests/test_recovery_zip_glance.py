"""A torch.save zip judged at a glance (its central directory's two ends and C-speed searches) must never be
taken for whole where walking every entry refuses it.

``whole_files`` judges a large model's zip (hundreds of entries) from the
first and last central directory entries and a count of entry signatures, and
walks every entry only when the glance cannot tell. Here: what storage leaves
of a save (cut at any offset, a zero-filled tail as ext4's delayed allocation
leaves after a crash, a lost sector anywhere) gets the walk's verdict; names
and extras that hold the signature bytes or ``/data.pkl`` send it to the walk
and are judged right; the glance is what a whole file of many entries takes.
"""

import io
import pickle
import zipfile

import pytest

from nodeweave.entrypoint.recovery import whole_files
from nodeweave.entrypoint.recovery.whole_files import cut_off, torch_save_pickle

CENTRAL = b"PK\x01\x02"
SECTOR = 512


def torch_like(entries=300, names=(), extra=None, step=7):
    """A zip as torch.save writes one: ``data.pkl`` first, ``entries`` storages, ``version``; ``names`` added
    after data.pkl, and ``extra`` as the central directory extra field of the first storage."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"global_steps": step}, protocol=2))
        for name in names:
            archive.writestr(name, b"n" * 24)
        for index in range(entries):
            info = zipfile.ZipInfo(f"archive/data/{index}")
            if extra is not None and index == 0:
                info.extra = extra
            archive.writestr(info, bytes([index % 251 + 1]) * 16)
        archive.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def judge(path, data):
    path.write_bytes(data)
    info = path.stat()
    return cut_off(str(path), path.name, info.st_size, info.st_mtime_ns)


@pytest.fixture
def walks(monkeypatch):
    """How many times the entry-by-entry walk ran (the glance could not tell)."""
    calls = []
    walk = whole_files._central_walk

    def counted(*args):
        calls.append(args)
        return walk(*args)

    monkeypatch.setattr(whole_files, "_central_walk", counted)
    return calls


def walked_only(monkeypatch):
    monkeypatch.setattr(whole_files, "_central_glance", lambda *args: None)


def table(data):
    """(start, end) of the central directory in ``data``, as its end record says (not zip64)."""
    end = data.rindex(b"PK\x05\x06")
    return int.from_bytes(data[end + 16:end + 20], "little"), end


def test_a_whole_zip_of_many_entries_is_judged_at_a_glance_and_its_pickle_found(tmp_path, walks):
    data = torch_like(300)
    assert judge(tmp_path / "optimizer.pt", data) is None
    assert walks == []  # the glance agreed: no entry walked
    assert pickle.loads(torch_save_pickle(str(tmp_path / "optimizer.pt"), 1 << 20)) == {"global_steps": 7}


def test_a_file_cut_anywhere_or_with_a_zero_filled_tail_is_refused(tmp_path):
    data = torch_like(300)
    start, _ = table(data)
    cuts = sorted(set(range(1, len(data), 97)) | set(range(start - 64, len(data), 13)) |
                  set(range(len(data) - 100, len(data))))
    for cut in cuts:
        assert judge(tmp_path / f"cut{cut}.pt", data[:cut]), cut  # killed mid-write
        # ext4's delayed allocation after a crash: the size was recorded, the last pages never written
        zeroed = data[:cut] + bytes(len(data) - cut)
        if zeroed != data:  # the end record's last fields (comment length, offset's high byte) are zeros
            assert judge(tmp_path / f"zeros{cut}.pt", zeroed), cut


def test_a_lost_sector_of_the_central_directory_gets_the_walks_verdict(tmp_path, monkeypatch):
    data = torch_like(300)
    start, end = table(data)
    lost = [bytes(data[:at] + bytes(SECTOR) + data[at + SECTOR:]) for at in range(0, len(data), SECTOR)]
    glanced = [judge(tmp_path / f"g{index}.pt", variant) for index, variant in enumerate(lost)]
    walked_only(monkeypatch)
    walked = [judge(tmp_path / f"w{index}.pt", variant) for index, variant in enumerate(lost)]
    assert glanced == walked
    for index, at in enumerate(range(0, len(data), SECTOR)):
        if at + SECTOR > start:  # a sector of the table or the end record lost: refused
            assert glanced[index], at


def test_a_zeroed_stretch_inside_one_long_entry_is_walked_and_refused(tmp_path, walks):
    # an entry longer than a sector can lose its fixed fields to zeros with every signature kept:
    # only the zero run tells, and the walk then finds the table no longer chains
    data = torch_like(300, extra=b"\x99\x99" + (2000).to_bytes(2, "little") + b"x" * 2000)
    at = data.index(b"archive/data/0", table(data)[0]) - 46  # that entry's central record
    broken = data[:at + 4] + bytes(SECTOR + 100) + data[at + 4 + SECTOR + 100:]
    assert broken.count(CENTRAL) == data.count(CENTRAL)
    assert "central directory holds" in judge(tmp_path / "zeroed.pt", broken)
    assert walks


@pytest.mark.parametrize("where", ["name", "extra"])
def test_the_entry_signature_inside_a_name_or_extra_sends_the_zip_to_the_walk_and_it_is_judged_right(
        tmp_path, walks, where):
    if where == "name":
        data = torch_like(300, names=["archive/PK\x01\x02"])
    else:
        data = torch_like(300, extra=b"\x99\x99\x08\x00" + CENTRAL + b"\0\0\0\0")
    assert judge(tmp_path / "whole.pt", data) is None
    assert len(walks) == 1  # the count of signatures disagreed with the end record
    assert pickle.loads(torch_save_pickle(str(tmp_path / "whole.pt"), 1 << 20)) == {"global_steps": 7}
    # and a broken entry in the middle of that table, which only the walk reads, is refused
    start, _ = table(data)
    middle = data.index(b"archive/data/150", start) - 46
    broken = bytearray(data)
    broken[middle + 20:middle + 24] = (10 ** 6).to_bytes(4, "little")
    assert "whose entry runs past its central directory" in judge(tmp_path / "broken.pt", bytes(broken))


def test_a_fake_last_entry_hidden_in_an_extra_never_stands_in_for_the_real_one(tmp_path, walks):
    # the glance reads the last entry at the table's last signature: an extra ending in a well-formed
    # entry record (its data before the table) must not hide a real last entry whose data runs past it
    data = torch_like(40)
    start, end = table(data)
    fake = bytearray(data[start:start + 46 + len("archive/data.pkl")])
    fake[42:46] = (0).to_bytes(4, "little")  # local header at 0: data.pkl's, before the table
    fake[30:32] = fake[32:34] = fake[28:30] = (0).to_bytes(2, "little")  # no extra, no comment, no name
    last = data.rindex(CENTRAL, start, end)
    name_len, extra_len = int.from_bytes(data[last + 28:last + 30], "little"), len(fake[:46])
    record = bytearray(data[last:last + 46 + name_len])
    record[30:32] = (4 + extra_len).to_bytes(2, "little")
    record[20:24] = (10 ** 6).to_bytes(4, "little")  # the real last entry's data runs past the table
    extra = b"\x99\x99" + extra_len.to_bytes(2, "little") + bytes(fake[:46])
    table_bytes = data[start:last] + bytes(record) + extra
    eocd = bytearray(data[end:])
    eocd[12:16] = len(table_bytes).to_bytes(4, "little")
    crafted = data[:start] + table_bytes + bytes(eocd)
    assert crafted.rfind(CENTRAL, 0, start + len(table_bytes)) == last + 46 + name_len + 4  # the fake one
    assert "whose entry runs past its central directory" in judge(tmp_path / "crafted.pt", crafted)
    assert walks


def test_data_pkl_in_another_folder_or_inside_an_extra_is_not_taken_for_the_pickle(tmp_path, walks):
    nested = pickle.dumps({"global_steps": 999}, protocol=2)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("other/deep/data.pkl", nested)  # two slashes: not torch.save's pickle
        info = zipfile.ZipInfo("archive/byteorder")
        info.extra = b"\x99\x99\x10\x00" + b"archive/data.pkl"
        archive.writestr(info, b"little")
        archive.writestr("archive/data.pkl", pickle.dumps({"global_steps": 7}, protocol=2))
        for index in range(300):
            archive.writestr(f"archive/data/{index}", bytes(16))
    assert judge(tmp_path / "model.pt", buffer.getvalue()) is None
    assert walks == []
    assert pickle.loads(torch_save_pickle(str(tmp_path / "model.pt"), 1 << 20)) == {"global_steps": 7}


def test_entries_out_of_the_order_of_their_data_are_walked(tmp_path, walks):
    data = torch_like(40)
    start, end = table(data)
    first, last = start, data.rindex(CENTRAL, start, end)
    swapped = bytearray(data)  # the first and last entries' local header offsets swapped
    swapped[first + 42:first + 46], swapped[last + 42:last + 46] = data[last + 42:last + 46], data[
        first + 42:first + 46]
    judge(tmp_path / "swapped.pt", bytes(swapped))
    assert walks


def test_a_zip64_end_record_is_judged_at_a_glance_like_the_walk(tmp_path, walks, monkeypatch):
    data = torch_like(0xFFFF + 10)  # more entries than a plain end record counts: zipfile writes zip64's
    assert b"PK\x06\x06" in data[-200:]
    assert judge(tmp_path / "big.pt", data) is None
    assert walks == []
    cut = data[:-100]  # the zip64 end record and locator cut off
    assert judge(tmp_path / "cut.pt", cut)
    walked_only(monkeypatch)
    assert judge(tmp_path / "big-walked.pt", data) is None


def with_zip64_end(data):
    """``data`` with the zip64 end record and locator torch.save writes before the end record of every file
    (its values the end record's own, which are not at their maximum)."""
    end = data.rindex(b"PK\x05\x06")
    entries, cd_size, cd_offset = (int.from_bytes(data[end + at:end + at + width], "little")
                                   for at, width in ((10, 2), (12, 4), (16, 4)))
    record = (b"PK\x06\x06" + (44).to_bytes(8, "little") + b"\x1e\x03\x2d\x00" + bytes(8) +
              entries.to_bytes(8, "little") * 2 + cd_size.to_bytes(8, "little") + cd_offset.to_bytes(8, "little"))
    locator = b"PK\x06\x07" + bytes(4) + end.to_bytes(8, "little") + (1).to_bytes(4, "little")
    return data[:end] + record + locator + data[end:]


def test_torch_saves_zip64_end_record_is_where_the_table_ends_and_a_zero_filled_end_record_is_refused(tmp_path):
    data = with_zip64_end(torch_like(300))
    assert judge(tmp_path / "whole.pt", data) is None
    end = data.rindex(b"PK\x05\x06")
    for cut in range(end + 4, len(data)):  # the end record's fields lost past its signature, the zip64 one kept
        zeroed = data[:cut] + bytes(len(data) - cut)
        if zeroed != data:
            assert judge(tmp_path / f"zeros{cut}.pt", zeroed), cut  # torch's reader takes them: no entries


def test_a_real_torch_save_is_judged_at_a_glance_and_refused_cut_or_zero_filled_anywhere(tmp_path, walks):
    torch = pytest.importorskip("torch")
    torch.save({f"layer{index}": torch.zeros(4) for index in range(300)} | {"step": 7}, tmp_path / "whole.pt")
    data = (tmp_path / "whole.pt").read_bytes()
    assert judge(tmp_path / "model.pt", data) is None
    assert walks == []
    start = data.rindex(b"PK\x06\x06") - 20_000
    for cut in sorted(set(range(1, len(data), 211)) | set(range(start, len(data), 7))):
        assert judge(tmp_path / f"cut{cut}.pt", data[:cut]), cut
        zeroed = data[:cut] + bytes(len(data) - cut)
        if zeroed != data:
            assert judge(tmp_path / f"zeros{cut}.pt", zeroed), cut


def test_a_data_pkl_in_the_middle_whose_data_runs_past_the_table_is_refused(tmp_path, walks):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for index in range(150):
            archive.writestr(f"archive/data/{index}", bytes([1]) * 16)
        archive.writestr("archive/data.pkl", pickle.dumps({"global_steps": 7}, protocol=2))
        for index in range(150, 300):
            archive.writestr(f"archive/data/{index}", bytes([1]) * 16)
    data = buffer.getvalue()
    assert judge(tmp_path / "whole.pt", data) is None
    assert walks == []
    assert pickle.loads(torch_save_pickle(str(tmp_path / "whole.pt"), 1 << 20)) == {"global_steps": 7}
    record = data.index(b"archive/data.pkl", table(data)[0]) - 46
    broken = bytearray(data)
    broken[record + 20:record + 24] = (10 ** 6).to_bytes(4, "little")  # its data said to run past the table
    assert "whose entry runs past its central directory" in judge(tmp_path / "broken.pt", bytes(broken))
