"""Unit tier: every command the documentation shows (README.md, docs/, the charts' READMEs,
manifests/**/README.md, the commands quoted in manifests' comments; localplane.doccommands
extracts them) is parsed by the program it runs, without running it:

- `mongobench` / `kubectl mongobench`: the CLI's own click parser (an unknown command or option,
  a missing argument or option, a bad value fail) and the CLI's own check of object kinds
  (`calibrate` given a run's name where the A/A experiment is meant);
- `kubectl` and `helm`: the subcommand chain and every flag exist, read from the pinned
  binaries' own `--help` (and `kubectl options` for kubectl's global flags);
- `make`: the target exists in the Makefile or a file it includes;
- every repository path a command names (manifests/..., charts/...) exists.

A usage line (`mongobench list [-A | -n NS] ...`) is checked for its command and options. A
command marked `# not run here: WHY` is checked all the same (only the cluster tier's runs skip
it: e2e/local/tests/test_doc_commands_applied.py).
"""

from __future__ import annotations

import pytest

from localplane import doccommands as dc

pytestmark = pytest.mark.unit

SNIPPETS = dc.snippets()


def failures(items: list[dc.Snippet]) -> list[str]:
    return [f"{s.where}: {s.text}\n    {p}" for s in items for p in dc.problems(s)]


def test_every_documented_command_parses_with_its_own_program(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = failures(SNIPPETS)
    checked, usage, line = dc.summary(SNIPPETS)
    with capsys.disabled():
        print(f"\n{line}")
    assert not bad, "\n".join(bad)
    # The extraction found the documents' commands (a broken extractor checks nothing).
    assert checked["mongobench"] >= 8 and checked["kubectl"] >= 15 and checked["helm"] >= 5
    assert checked["make"] >= 10 and usage >= 5


# Each documented command that failed as written (issue 33), and what its program says.
BROKEN = {
    "mongobench report s3://r/aws s3://r/openstack --group-by platform,shards --out study":
        "No such option: --out",
    "mongobench report experiment/cloud-write-concerns": "Missing option '--output'",
    "mongobench calibrate calibration-rs3":
        "give the calibration experiment, experiment/calibration-rs3",
    "kubectl mongobench report x -o out --calibration aa": "experiment/aa",
    "kubectl mongobench compre a b": "no such mongobench command: compre",
    "mongobench list [-A | -n NS] [--selecter X]": "no such option: --selecter",
    "kubectl apply --server-sid -k manifests/install/crds": "unknown flag --server-sid",
    "kubectl --context eks aply -f x.yaml": "unknown kubectl command 'aply'",
    "helm upgrade mongobench charts/mongobench --reset-then-reuse": "unknown flag",
    "helm instal mongobench charts/mongobench": "unknown helm command 'instal'",
    "make bench-nothing KEEP=1": "no make target 'bench-nothing'",
    "kubectl apply -f manifests/samples/mongocluster-minmal.yaml": "no such file or folder",
}  # fmt: skip


@pytest.mark.parametrize("text", BROKEN, ids=range(len(BROKEN)))
def test_a_command_that_fails_as_written_is_caught_naming_why(text: str) -> None:
    got = dc.problems(dc.Snippet("doc.md", 7, text))
    assert any(BROKEN[text] in p for p in got), got


def test_the_commands_are_read_from_fences_indented_blocks_and_yaml_comments() -> None:
    markdown = "\n".join([
        "Text `mongobench list -l` in prose is no command.",
        "```sh",
        "kubectl create namespace a && kubectl apply -n a \\",
        "  -f manifests/samples/  # the samples",
        "# not run here: no EKS",
        "eksctl create cluster -f c.yaml",
        "",
        "make demo   # not run here: ten minutes",
        "make test",
        "mongobench list [-A | -n NS]",
        "                [-o table|json]",
        "```",
        "```console",
        "$ mongobench describe r1",
        "output, not a command",
        "```",
        "```yaml",
        "kubectl: not a shell block",
        "```",
        "",
        "    helm list -A",
    ])  # fmt: skip
    got = [(s.line, s.text, s.not_run) for s in dc.markdown(markdown, "doc.md")]
    assert got == [
        (3, "kubectl create namespace a && kubectl apply -n a -f manifests/samples/", None),
        (6, "eksctl create cluster -f c.yaml", "no EKS"),
        (8, "make demo", "ten minutes"),
        (9, "make test", None),
        (10, "mongobench list [-A | -n NS] [-o table|json]", None),
        (14, "mongobench describe r1", None),
        (21, "helm list -A", None),
    ]
    assert [c[0] for c in dc.Snippet("d", 1, got[0][1]).commands()] == ["kubectl", "kubectl"]
    yaml_text = "\n".join([
        "# A sample: `mongobench report` alone names the command; this runs it:",
        "#   mongobench report experiment/x \\",
        "#     -o out",
        "# and `mongobench describe experiment/x` shows it.",
        "#   sed 's|a|b|' f.yaml \\",
        "#     | kubectl --context b apply -f -",
        "kind: X",
    ])  # fmt: skip
    assert [(s.line, s.text) for s in dc.yaml_comments(yaml_text, "s.yaml")] == [
        (2, "mongobench report experiment/x -o out"),
        (4, "mongobench describe experiment/x"),
        (5, "sed 's|a|b|' f.yaml | kubectl --context b apply -f -"),
    ]


def test_placeholders_become_sample_values_and_the_plugin_form_is_mongobench() -> None:
    s = dc.Snippet("d", 1, "kubectl get bmr -l mongobench.io/gitops-entry=<name> -n NAMESPACE")
    assert s.commands() == [["kubectl", "get", "bmr", "-l", "mongobench.io/gitops-entry=name",
                             "-n", "docs"]]  # fmt: skip
    # A redirection's file is no command of its own.
    assert dc.simple_commands("go run . eval h.lua < obj.yaml > out.json") == [
        ["go", "run", ".", "eval", "h.lua"]
    ]
    assert dc.program(["kubectl", "mongobench", "list"]) == "mongobench"
    assert dc.program(["kubectl", "apply", "-f", "x"]) == "kubectl"
