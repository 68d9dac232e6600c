"""walk18a rows 2, 16, 18-20, 22-25, 27: one test per class of fix21f's brief."""

from cli_run import in_process, one_line
from team_folder import make_team


def test_output_refusals_name_what_the_verb_takes(tmp_path, monkeypatch, capsys):
    """walk18a A20, A22: an -o refused lists the verb's own formats (name too on status, runs ls, image variants),
    and a flag that does nothing with -o name (status --fingerprints, --ranks, --stacks) is refused as README says
    such flags are."""
    make_team(tmp_path, monkeypatch)
    for verb in (["status"], ["runs", "ls"], ["image", "variants"]):
        code, _, err = in_process(capsys, *verb, "-o", "xml")
        assert code == 2 and "is not accepted: table, wide, json, yaml, name" in one_line(err), err
    code, _, err = in_process(capsys, "render", "-o", "xml")
    assert code == 2 and "is not accepted: table, wide, json, yaml" in err and "yaml, name" not in err, err
    for flag in ("--fingerprints", "--ranks", "--stacks"):
        code, out, err = in_process(capsys, "status", "-o", "name", flag)
        assert code == 2 and f"{flag} does nothing with --output name" in one_line(err), err
