"""What the release workflow (.github/workflows/release.yaml) asks of the checkout at a tag, in
one place so the tests run the same code (hack/tests/test_release.py). Standard library only:
the release runners need nothing but Python.

    release.py check TAG                     the tag is v<version> of the charts, the packages and
                                             a dated CHANGELOG.md section; prints the version
    release.py notes VERSION                 that section's text: the GitHub Release's notes
    release.py chart VERSION OUT [NAME=DIGEST...]
                                             both charts copied to OUT/<chart>, their Chart.yaml
                                             given the section as `artifacthub.io/changes` and the
                                             images of `artifacthub.io/images` and the
                                             defaults of values.yaml pinned to the digests the
                                             release pushed and signed (one per image: all or
                                             it fails), so an install runs what was signed

CHANGELOG.md follows Keep a Changelog: `## [X.Y.Z] - YYYY-MM-DD` sections of `### Added`,
`### Changed`, ... each a list of `- ` items; those headings are Artifact Hub's change kinds.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHARTS = ["mongobench-crds", "mongobench"]
PACKAGES = ["operator", "bench-jobs/runner", "archive", "results", "cli"]
KINDS = {
    "Added": "added",
    "Changed": "changed",
    "Deprecated": "deprecated",
    "Removed": "removed",
    "Fixed": "fixed",
    "Security": "security",
}
_SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S+))?\s*$", re.MULTILINE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TAG = re.compile(r"^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class ReleaseError(Exception):
    """The checkout cannot be released as asked (the message says why)."""


def section(changelog: str, version: str) -> tuple[str | None, str]:
    """The date and the text of `## [version]` (up to the next `## `)."""
    matches = list(_SECTION.finditer(changelog))
    for i, m in enumerate(matches):
        if m.group("version") == version:
            end = matches[i + 1].start() if i + 1 < len(matches) else len(changelog)
            # Link references ([0.1.0]: https://...) close the file, not the section.
            body = re.split(r"^\[[^\]]+\]: ", changelog[m.end() : end], flags=re.MULTILINE)[0]
            return m.group("date"), body.strip() + "\n"
    raise ReleaseError(f"CHANGELOG.md has no section '## [{version}]'")


def changes(body: str) -> list[tuple[str, str]]:
    """(Artifact Hub kind, one-line description) of every item of a section, in order."""
    found: list[tuple[str, str]] = []
    kind: str | None = None
    for line in body.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
            if heading not in KINDS:
                raise ReleaseError(f"CHANGELOG.md: '### {heading}' is not one of {list(KINDS)}")
            kind = KINDS[heading]
        elif line.startswith("- "):
            if kind is None:
                raise ReleaseError(f"CHANGELOG.md: an item before any '### ' heading: {line}")
            found.append((kind, line[2:].strip()))
        elif line.startswith("  ") and line.strip() and found:
            found[-1] = (found[-1][0], f"{found[-1][1]} {line.strip()}")
    return [(k, re.sub(r"\*\*|`", "", d)) for k, d in found]


def _field(text: str, key: str) -> str:
    m = re.search(rf'^{key}: *"?([^"\n]*)"?$', text, re.MULTILINE)
    if not m:
        raise ReleaseError(f"no top-level {key}")
    return m.group(1).strip()


def check(tag: str, repo: Path = REPO) -> str:
    """The version a tag releases, when everything that carries a version agrees with it."""
    m = _TAG.match(tag)
    if not m:
        raise ReleaseError(f"tag {tag!r} is not vX.Y.Z")
    version = m.group(1)
    found = {}
    for chart in CHARTS:
        text = (repo / "charts" / chart / "Chart.yaml").read_text()
        found[f"charts/{chart} version"] = _field(text, "version")
        found[f"charts/{chart} appVersion"] = _field(text, "appVersion")
    for folder in PACKAGES:
        project = tomllib.loads((repo / folder / "pyproject.toml").read_text())["project"]
        found[f"{folder}/pyproject.toml"] = project["version"]
    wrong = {k: v for k, v in found.items() if v != version}
    if wrong:
        raise ReleaseError(f"tag {tag} but: {', '.join(f'{k} is {v}' for k, v in wrong.items())}")
    date, body = section((repo / "CHANGELOG.md").read_text(), version)
    if not date or not _DATE.match(date):
        raise ReleaseError(
            f"CHANGELOG.md's '## [{version}]' has no release date ('## [{version}] - YYYY-MM-DD')"
        )
    if not changes(body):
        raise ReleaseError(f"CHANGELOG.md's '## [{version}]' lists no change")
    return version


def notes(version: str, repo: Path = REPO) -> str:
    return section((repo / "CHANGELOG.md").read_text(), version)[1]


def _annotation_block(name: str, items: list[str]) -> str:
    return f"  artifacthub.io/{name}: |\n" + "".join(f"    {i}\n" for i in items)


def _pin_value(text: str, repository: str, digest: str) -> str:
    """values.yaml with the first `digest: ""` after `repository: <repository>` set."""
    m = re.search(
        rf'^( +)repository: {re.escape(repository)}\n(?:\1(?!digest:).*\n)*?\1digest: ""\n',
        text,
        re.MULTILINE,
    )
    if not m:
        raise ReleaseError(f'values.yaml: no `digest: ""` beside repository {repository}')
    pinned = m.group(0).replace('digest: ""', f'digest: "{digest}"')
    return text[: m.start()] + pinned + text[m.end() :]


def _digest_of(chart: str, repository: str, digests: dict[str, str]) -> str:
    name = repository.rsplit("/", 1)[-1]
    if name not in digests:
        raise ReleaseError(f"{chart}: no digest given for image {repository}")
    return digests[name]


def _release_chart_yaml(chart: str, text: str, changes_block: str, digests: dict[str, str]) -> str:
    """Chart.yaml with the changes annotation and the annotated images pinned."""
    if "\nannotations:\n" not in text or "\n  artifacthub.io/changes:" in text:
        raise ReleaseError(f"{chart}: Chart.yaml needs annotations without changes")
    text = text.replace("\nannotations:\n", "\nannotations:\n" + changes_block)
    return re.sub(
        r"(?<=image: )(?P<repo>[^\s:@]+):[^\s@]+(?=\n)",
        lambda m: f"{m.group(0)}@{_digest_of(chart, m.group('repo'), digests)}",
        text,
    )


def _release_values(chart: str, text: str, digests: dict[str, str]) -> str:
    """values.yaml with every image's default digest set."""
    for repository in re.findall(r"^ +repository: (\S+)$", text, re.MULTILINE):
        text = _pin_value(text, repository, _digest_of(chart, repository, digests))
    return text


def stage_chart(version: str, out: Path, digests: dict[str, str], repo: Path = REPO) -> list[Path]:
    """The charts as the release packages them (see the module's docstring)."""
    for name, digest in digests.items():
        if not _DIGEST.match(digest):
            raise ReleaseError(f"{name}: {digest!r} is not a sha256 digest")
    body = section((repo / "CHANGELOG.md").read_text(), version)[1]
    items = []
    for kind, description in changes(body):
        items += [f"- kind: {kind}", f"  description: {json.dumps(description)}"]
    changes_block = _annotation_block("changes", items)
    staged = []
    named: set[str] = set()
    for chart in CHARTS:
        dest = out / chart
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(repo / "charts" / chart, dest)
        chart_yaml, values = dest / "Chart.yaml", dest / "values.yaml"
        chart_yaml.write_text(
            _release_chart_yaml(chart, chart_yaml.read_text(), changes_block, digests)
        )
        values.write_text(_release_values(chart, values.read_text(), digests))
        named |= {
            m.rsplit("/", 1)[-1]
            for m in re.findall(r"^ +repository: (\S+)$", values.read_text(), re.MULTILINE)
        }
        staged.append(dest)
    if set(digests) - named:
        raise ReleaseError(f"digests of images no chart names: {sorted(set(digests) - named)}")
    return staged


def main(argv: list[str]) -> None:
    try:
        if len(argv) == 2 and argv[0] == "check":
            print(check(argv[1]))
        elif len(argv) == 2 and argv[0] == "notes":
            sys.stdout.write(notes(argv[1]))
        elif len(argv) >= 3 and argv[0] == "chart":
            digests = dict(a.split("=", 1) for a in argv[3:])
            for path in stage_chart(argv[1], Path(argv[2]), digests):
                print(path)
        else:
            raise SystemExit(__doc__)
    except ReleaseError as e:
        raise SystemExit(f"release.py: {e}") from None


if __name__ == "__main__":
    main(sys.argv[1:])
