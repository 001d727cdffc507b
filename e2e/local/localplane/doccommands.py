"""The shell commands the documentation shows, extracted so that tests can parse and run them.

Where commands are read:

- Markdown (README.md, docs/**/*.md, charts/*/README.md, manifests/**/README.md): fenced blocks
  marked sh, bash, shell or console (in console blocks, the lines after `$ `), and indented
  code blocks whose lines start with a known program;
- YAML comments (manifests/**/*.yaml): comment lines indented under the `#` that start with a
  known program (`#   mongobench compare ...`), and code spans quoted in comments
  (`` `mongobench calibrate experiment/NAME` ``) that give more than the command's name.

Backslash continuations, lines ending in a pipe and a synopsis's indented `[...]` lines are
joined to their command; comments are dropped. `# not run here: WHY` marks a command (at its end)
or the rest of its block (on a line of its own) as one that cannot run on the build machines:
tests still check its program, subcommand and flags, and do not run it.

`python -m localplane.doccommands` lists them with their places and counts.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import typer
import typer.main

from localplane.plane import kubectl_path
from localplane.tools import REPO, binary

MARKDOWN_GLOBS = ("README.md", "docs/**/*.md", "charts/*/README.md", "manifests/**/README.md")
YAML_GLOBS = ("manifests/**/*.yaml",)
# YAML generated from elsewhere (their comments are the generator's, checked where it lives).
YAML_SKIPPED = ("manifests/install/base/mongobench.yaml",)

# Placeholder -> the sample value a documented command is checked with.
PLACEHOLDERS = {"NAMESPACE": "docs", "X.Y.Z": "0.1.0"}
SHELL_FENCES = ("sh", "bash", "shell", "console")
# Programs whose commands are recognised in indented blocks and YAML comments.
PROGRAMS = ("mongobench", "kubectl", "kubectl-mongobench", "helm", "make", "kind", "eksctl", "sed")
NOT_RUN = "not run here:"
# Words a shell reads before a command, or that end a compound command.
SHELL_KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "time"})
COMPOUND_HEADS = frozenset({"for", "case", "function", "done", "fi", "esac", "{", "}"})


@dataclass(frozen=True)
class Snippet:
    """One documented command line (a pipeline or list, continuations joined)."""

    path: str  # relative to the repository
    line: int  # 1-based, where the command starts
    text: str
    not_run: str | None = None  # why it cannot run here, if marked

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def synopsis(self) -> bool:
        """A usage line (`[-A | -n NS]`, `RUN...`) rather than a command to run."""
        bare = re.sub(r"'[^']*'|\"[^\"]*\"", "", self.text)
        return bool(re.search(r"\[[^\]]*[-A-Z|][^\]]*\]|[A-Z]\.\.\.|\b[a-z]+\|[a-z]+\b", bare))

    def commands(self) -> list[list[str]]:
        """The simple commands of the line, as words (a pipeline's or list's members)."""
        return simple_commands(substitute(self.text))


def substitute(text: str, values: dict[str, str] | None = None) -> str:
    """Placeholders as the documents write them (`<name>`, `NAMESPACE`, `X.Y.Z`) replaced by
    sample values, so that a command parses as a user's would."""
    text = re.sub(r"<([A-Za-z][\w-]*)>", lambda m: m.group(1).lower(), text)
    for key, value in {**PLACEHOLDERS, **(values or {})}.items():
        text = re.sub(rf"(?<![\w.-]){re.escape(key)}(?![\w-])", value, text)
    return text


def simple_commands(text: str) -> list[list[str]]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    out: list[list[str]] = []
    current: list[str] = []
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: keep the words as written
        tokens = text.split()
    redirect = False
    for token in tokens:
        if redirect:  # a redirection's file: a word of the command it redirects
            redirect = False
            continue
        if token in ("<", ">", ">>", "&>", ">&", "2>"):
            redirect = True
            continue
        if token and set(token) <= set(";&|()<>"):
            if current:
                out.append(current)
            current = []
            continue
        if not current and token in SHELL_KEYWORDS:
            continue
        current.append(token)
    if current:
        out.append(current)
    return [c for c in out if c[0] not in COMPOUND_HEADS and not _assignment(c)]


def _assignment(words: list[str]) -> bool:
    return all(re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w) for w in words)


def _strip_comment(line: str) -> tuple[str, str | None]:
    """The line without its trailing comment, and the comment (a `#` after a blank, unquoted)."""
    quote: str | None = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), None


def _not_run(comment: str | None) -> str | None:
    if comment and comment.lower().startswith(NOT_RUN):
        return comment[len(NOT_RUN) :].strip() or "marked"
    return None


def join_lines(lines: Iterable[tuple[int, str]], path: str) -> list[Snippet]:
    """Commands from the lines of one block: (line number, text) in order."""
    out: list[Snippet] = []
    pending: list[str] = []
    start = 0
    block_mark: str | None = None
    line_mark: str | None = None

    def flush() -> None:
        nonlocal pending, line_mark
        text = " ".join(p.strip().removesuffix("\\").strip() for p in pending).strip()
        if text:
            out.append(Snippet(path, start, text, line_mark or block_mark))
        pending, line_mark = [], None

    for number, raw in lines:
        if not raw.strip():
            flush()
            block_mark = None
            continue
        code, comment = _strip_comment(raw)
        if not code.strip():  # a comment line: it may mark the rest of the block
            if not (pending and pending[-1].endswith("\\")):
                flush()
            block_mark = _not_run(comment) or block_mark
            continue
        continues = bool(pending) and (
            pending[-1].endswith(("\\", "|", "&&"))
            or (raw[:1].isspace() and code.lstrip().startswith(("[", "|", "&&")))
        )
        if not continues:
            flush()
            start = number
        pending.append(code)
        line_mark = _not_run(comment) or line_mark
    flush()
    return out


# --- Markdown ------------------------------------------------------------------------------------
def markdown(text: str, path: str) -> list[Snippet]:
    out: list[Snippet] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(```+|~~~+)\s*([\w-]*)", lines[i])
        if fence:
            indent, marker, lang = fence.groups()
            body: list[tuple[int, str]] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append((i + 1, lines[i].removeprefix(indent)))
                i += 1
            i += 1
            if lang == "console":
                body = [(n, t.strip()[2:]) for n, t in body if t.strip().startswith("$ ")]
            if lang in SHELL_FENCES:
                out += join_lines(body, path)
            continue
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append((i + 1, lines[i][4:]))
                i += 1
            if body and _starts_with_program(body[0][1]):
                out += join_lines(body, path)
            continue
        i += 1
    return out


def _starts_with_program(text: str) -> bool:
    words = text.split()
    return bool(words) and words[0] in PROGRAMS


# --- YAML comments -------------------------------------------------------------------------------
def yaml_comments(text: str, path: str) -> list[Snippet]:
    out: list[Snippet] = []
    block: list[tuple[int, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        m = re.match(r"^\s*#(.*)$", raw)
        body = m.group(1) if m else None
        in_block = body is not None and bool(block) and block[-1][1].rstrip().endswith(("\\", "|"))
        if body is not None and (in_block or re.match(r"^\s{2,}(\S+)", body)):
            word = body.split()[0] if body.split() else ""
            if in_block or word in PROGRAMS:
                block.append((number, body))
                continue
        if block:
            out += join_lines(block, path)
            block = []
        if body is not None:
            out += _code_spans(body, number, path)
    if block:
        out += join_lines(block, path)
    return out


def _code_spans(comment: str, number: int, path: str) -> list[Snippet]:
    out = []
    for span in re.findall(r"`([^`]+)`", comment):
        words = span.split()
        # `mongobench report` names a command; `mongobench report experiment/x -o r` is one
        # (and `make lint`: a target is all a make command needs).
        if words and words[0] in PROGRAMS and len(words) > (1 if words[0] == "make" else 2):
            out.append(Snippet(path, number, span.strip()))
    return out


# --- the documents -------------------------------------------------------------------------------
def documents(root: Path = REPO) -> list[Path]:
    found: set[Path] = set()
    for pattern in (*MARKDOWN_GLOBS, *YAML_GLOBS):
        found |= {p for p in root.glob(pattern) if p.is_file()}
    skipped = {root / s for s in YAML_SKIPPED}
    return sorted(p for p in found if p not in skipped and ".venv" not in p.parts)


def snippets(root: Path = REPO) -> list[Snippet]:
    out: list[Snippet] = []
    for path in documents(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        out += markdown(text, rel) if path.suffix == ".md" else yaml_comments(text, rel)
    return out


def program(words: list[str]) -> str:
    """The program a simple command runs; `kubectl mongobench` is the plugin, mongobench."""
    if words[0] == "kubectl-mongobench":
        return "mongobench"
    if words[0] == "kubectl":
        positional = _positional(words[1:])
        if positional[:1] == ["mongobench"]:
            return "mongobench"
    return words[0]


def _positional(words: list[str]) -> list[str]:
    return [w for w in words if not w.startswith("-")]


def by_program(items: Iterable[Snippet]) -> Iterator[tuple[Snippet, str, list[str]]]:
    for s in items:
        for words in s.commands():
            yield s, program(words), words


# --- checks: each command's program, subcommand and flags, by the program's own parser ---
# kubectl plugins the documents use besides mongobench (not installed here).
KUBECTL_PLUGINS = frozenset({"krew"})
CHECKED = ("mongobench", "kubectl", "helm", "make")


def problems(s: Snippet, root: Path = REPO) -> list[str]:
    """What is wrong with a documented command line, each said in one line (none: it parses)."""
    out: list[str] = []
    for words in s.commands():
        out += path_problems(words, root)
        if s.synopsis:
            continue
        prog = program(words)
        if prog == "mongobench":
            out += _some(mongobench_problem(words))
        elif prog in ("kubectl", "helm"):
            out += _some(cobra_problem(prog, words))
        elif prog == "make":
            out += [
                f"no make target {t!r}" for t in _make_goals(words) if t not in make_targets(root)
            ]
    if s.synopsis:
        out += synopsis_problems(s)
    return out


def _some(problem: str | None) -> list[str]:
    return [] if problem is None else [problem]


def repo_paths(words: Iterable[str], root: Path = REPO) -> list[str]:
    """The words (or `--flag=` values) that name a path inside the repository."""
    tops = {p.name for p in root.iterdir() if not p.name.startswith(".")}
    out = []
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if "/" in value and value.split("/", 1)[0] in tops:
            out.append(value)
    return out


def path_problems(words: list[str], root: Path = REPO) -> list[str]:
    """Repository paths a command names (manifests/..., charts/...) that do not exist."""
    return [
        f"{v}: no such file or folder in the repository"
        for v in repo_paths(words, root)
        if not (root / v).exists()
    ]


# mongobench: click's own parser, the subcommand chain resolved as the CLI resolves it.
def mongobench_args(words: list[str]) -> list[str]:
    return words[words.index("mongobench") + 1 :] if words[0] == "kubectl" else words[1:]


def mongobench_problem(words: list[str]) -> str | None:
    from mongobench_cli.app import ref_problem

    args = mongobench_args(words)
    command = _mongobench_command(args[0]) if args else None
    if command is None:
        return f"no such mongobench command: {' '.join(args[:1]) or '(none)'}"
    try:
        parsed = command.make_context(args[0], list(args[1:]), parent=_mongobench_context())
    except typer.TyperException as exc:  # click's usage errors (typer carries its own click)
        return str(exc.format_message())
    return ref_problem(args[0], parsed.params)


@cache
def _mongobench_context() -> typer.Context:
    from mongobench_cli.app import app

    group = typer.main.get_command(app)
    return typer.Context(group, info_name="mongobench")


def _mongobench_command(name: str) -> Any:
    ctx = _mongobench_context()
    return ctx.command.get_command(ctx, name)  # type: ignore[attr-defined]


def _synopsis_flags(text: str) -> list[str]:
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)
    return re.findall(r"(?<![\w/.:=-])(--?[A-Za-z][\w-]*)", bare)


def synopsis_problems(s: Snippet) -> list[str]:
    """A usage line: its command exists and every option it shows is one of that command's."""
    words = s.text.split()
    if program(words) != "mongobench":
        return []
    args = mongobench_args(words)
    command = _mongobench_command(args[0]) if args else None
    if command is None:
        return [f"no such mongobench command: {' '.join(args[:1]) or '(none)'}"]
    names = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    flags = _synopsis_flags(" ".join(args[1:]))
    return [f"no such option: {f}" for f in flags if f not in names]


# kubectl and helm: cobra commands, read from their own --help.
@dataclass(frozen=True)
class CobraHelp:
    subcommands: frozenset[str]
    flags: dict[str, bool]  # flag (-n, --namespace) -> takes a value


def executable(prog: str) -> str:
    return kubectl_path() if prog == "kubectl" else str(binary(prog))


@cache
def cobra_help(prog: str, path: tuple[str, ...]) -> CobraHelp:
    args = ["options"] if path == ("(global)",) else [*path, "--help"]
    proc = subprocess.run(
        [executable(prog), *args], capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "KUBECONFIG": "/nonexistent"},
    )  # fmt: skip
    return parse_cobra_help(proc.stdout)


def parse_cobra_help(text: str) -> CobraHelp:
    """Subcommands (the `... Commands:` sections) and flags of a cobra command's help, in
    kubectl's layout (`-f, --filename=[]:`) and helm's (`-n, --namespace string   text`)."""
    subcommands: set[str] = set()
    flags: dict[str, bool] = {}
    in_commands = False
    for line in text.splitlines():
        if re.match(r"^[A-Z][\w ()-]*Commands[^:]*:\s*$", line):
            in_commands = True
            continue
        if in_commands:
            m = re.match(r"^  ([a-z][\w-]*)\s{2,}\S", line)
            if m:
                subcommands.add(m.group(1))
                continue
            in_commands = False
        kubectl = re.match(r"^\s+(?:(-\w), )?(--[\w-]+)=(.*):$", line)
        helm = re.match(r"^\s+(?:(-\w), )?(--[\w-]+)(?: ([a-zA-Z]\w*))?\s{2,}\S", line)
        if kubectl:
            short, long, default = kubectl.groups()
            value = default not in ("true", "false")
        elif helm:
            short, long, kind = helm.groups()
            value = kind is not None
        else:
            continue
        flags[long] = value
        if short:
            flags[short] = value
    return CobraHelp(frozenset(subcommands), flags)


def cobra_problem(prog: str, words: list[str]) -> str | None:
    """The subcommand chain exists and each flag is one of its own or a global one."""
    global_flags = cobra_help(prog, ("(global)",)).flags if prog == "kubectl" else {}
    path: list[str] = []
    used: list[str] = []
    tokens = words[1:]
    i, positional = 0, False
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            break
        known = {**global_flags, **cobra_help(prog, tuple(path)).flags}
        if token.startswith("-") and len(token) > 1:
            name = token.split("=", 1)[0]
            used.append(name)
            i += 2 if "=" not in token and known.get(name, False) else 1
            continue
        if not positional and token in cobra_help(prog, tuple(path)).subcommands:
            path.append(token)
        elif not path:
            if prog == "kubectl" and token in KUBECTL_PLUGINS:
                return None  # a plugin: its own flags
            return f"unknown {prog} command {token!r}"
        else:
            positional = True
        i += 1
    if not path:
        return f"{prog} without a command"
    known = {**global_flags, **cobra_help(prog, tuple(path)).flags}
    unknown = [f for f in used if f not in known]
    if unknown:
        return f"{prog} {' '.join(path)}: unknown flag {', '.join(unknown)}"
    return None


# make: the targets of the Makefile and the files it includes.
def _make_goals(words: list[str]) -> list[str]:
    return [w for w in words[1:] if "=" not in w and not w.startswith("-")]


@cache
def make_targets(root: Path = REPO) -> frozenset[str]:
    targets: set[str] = set()
    files = [root / "Makefile"]
    while files:
        text = files.pop().read_text()
        for m in re.finditer(r"^-?include\s+(.+)$", text, re.M):
            files += [root / f for f in m.group(1).split() if (root / f).suffix == ".mk"]
        for m in re.finditer(
            r"^([A-Za-z0-9_.-]+(?:[ \t]+[A-Za-z0-9_.-]+)*)[ \t]*::?(?!=)", text, re.M
        ):
            targets.update(m.group(1).split())
    return frozenset(targets)


# --- what a documented `kubectl apply` applies ------------------------------------------------
# kubectl's global flags that take a value, as the documents place them before the subcommand.
_KUBECTL_VALUE_FLAGS = frozenset({"--context", "--kubeconfig", "-n", "--namespace"})


@dataclass(frozen=True)
class Apply:
    """One documented `kubectl apply`: its arguments without `--context`, and that context."""

    snippet: Snippet
    args: tuple[str, ...]  # after `kubectl`
    context: str  # "" when the command names none

    @property
    def source(self) -> str | None:
        """What it applies: a file or folder (-f), a kustomization (-k), or `-` (stdin)."""
        return option(list(self.args), "-f", "--filename") or option(
            list(self.args), "-k", "--kustomize"
        )

    @property
    def kustomization(self) -> bool:
        return option(list(self.args), "-k", "--kustomize") is not None


def option(words: list[str], *names: str) -> str | None:
    """The value of the first of `names` among `words` (`-f X` or `-f=X`)."""
    for i, w in enumerate(words):
        for n in names:
            if w == n and i + 1 < len(words):
                return words[i + 1]
            if w.startswith(f"{n}="):
                return w.split("=", 1)[1]
    return None


def kubectl_applies(items: Iterable[Snippet]) -> list[Apply]:
    out = []
    for s, prog, words in by_program(items):
        if prog != "kubectl":
            continue
        args: list[str] = []
        context, i, sub = "", 1, None
        while i < len(words):
            w = words[i]
            if w == "--context" and i + 1 < len(words):
                context, i = words[i + 1], i + 2
                continue
            if w.startswith("--context="):
                context, i = w.split("=", 1)[1], i + 1
                continue
            if sub is None and not w.startswith("-"):
                sub = w
            args.append(w)
            if w in _KUBECTL_VALUE_FLAGS and i + 1 < len(words):
                args.append(words[i + 1])
                i += 1
            i += 1
        if sub == "apply":
            out.append(Apply(s, tuple(args), context))
    return out


def applied_manifests(a: Apply, root: Path = REPO) -> str | None:
    """The YAML an apply sends (a pipeline's upstream run here, from the repository's root), or
    None when it applies a file of the user's own that the repository does not ship."""
    source = a.source
    if source == "-":
        upstream = substitute(a.snippet.text).rsplit("|", 1)[0]
        proc = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", upstream], cwd=root, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            if "No such file" in proc.stderr and not repo_paths(shlex.split(upstream), root):
                return None  # an example's own file (bulk-import.yaml)
            raise RuntimeError(f"{a.snippet.where}: {upstream}: {proc.stderr.strip()}")
        return proc.stdout
    if source is None or not (root / source).exists():
        return None
    return manifests_at(root / source, kustomization=a.kustomization)


def manifests_at(path: Path, *, kustomization: bool) -> str:
    """The YAML of a file, of a folder's files (as `kubectl apply -f DIR`) or a kustomization's
    build (the real kubectl's kustomize, as `kubectl apply -k DIR`)."""
    if kustomization:
        proc = subprocess.run(
            [kubectl_path(), "kustomize", str(path)], capture_output=True, text=True,
            timeout=60, check=True,
        )  # fmt: skip
        return proc.stdout
    if path.is_dir():
        return "\n---\n".join(f.read_text() for f in sorted(path.glob("*.y*ml")))
    return path.read_text()


def summary(items: list[Snippet]) -> tuple[Counter[str], int, str]:
    """Commands by program (usage lines apart), the usage lines, and both said in a line."""
    by = Counter(p for _, p, _ in by_program(s for s in items if not s.synopsis))
    usage = sum(1 for s in items if s.synopsis)
    checked = ", ".join(f"{p} {by[p]}" for p in CHECKED)
    others = ", ".join(f"{p} {n}" for p, n in sorted(by.items()) if p not in CHECKED)
    line = (
        f"{len(items)} documented command lines; parsed by their program: {checked}; usage "
        f"lines checked for their options: {usage}; not checked: {others or 'none'}"
    )
    return by, usage, line


def main() -> None:
    found = snippets()
    for s in found:
        mark = f"  [not run here: {s.not_run}]" if s.not_run else ""
        print(f"{s.where}: {s.text}{mark}")
    print(summary(found)[2])


if __name__ == "__main__":
    main()
