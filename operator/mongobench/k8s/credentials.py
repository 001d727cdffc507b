"""Where the operator's API credentials come from: the pod's service account, else a kubeconfig.

One loader for both of the operator's clients (mongobench.k8s.client and kopf's, through its
login handler), so neither needs the `kubernetes` package (about 38 MiB resident; kopf imports
it whenever it is importable). What a kubeconfig may hold and the operator honours:
certificate authority (file or data, or insecure-skip-tls-verify), client
certificate and key (file or data), bearer token (inline or tokenFile), basic auth, an HTTP(S)
proxy-url, and exec plugins (EKS's `aws eks get-token`, OpenStack's). Refused with a message:
auth providers (the removed gcp/azure ones) and tls-server-name (kopf cannot honour it).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# client-go re-reads a token file at most once a minute; the kubelet rotates the projected
# token well before it expires.
TOKEN_FILE_MAX_AGE = 60.0
# Refresh exec-plugin credentials this long before they expire.
EXPIRY_MARGIN = dt.timedelta(seconds=30)
EXEC_TIMEOUT = 60.0


class CredentialsError(Exception):
    """No usable credentials: a one-line reason."""


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig `user.exec`: run to obtain a token or a client certificate."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    cluster: Mapping[str, Any] | None = None  # given to the plugin when provideClusterInfo
    workdir: Path | None = None  # a relative command is resolved against the kubeconfig's dir


@dataclass(frozen=True)
class Credentials:
    server: str
    ca_data: bytes | None = None  # PEM
    insecure: bool = False
    proxy_url: str | None = None
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None  # read at use: service-account tokens rotate
    cert_data: bytes | None = None  # PEM
    key_data: bytes | None = field(default=None, repr=False)  # PEM
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    namespace: str | None = None
    exec_plugin: ExecPlugin | None = None
    expiration: dt.datetime | None = None  # of what the exec plugin gave; TZ-aware

    def expired(self, now: dt.datetime | None = None) -> bool:
        now = now or dt.datetime.now(dt.UTC)
        return self.expiration is not None and now + EXPIRY_MARGIN >= self.expiration


def load(env: Mapping[str, str] | None = None) -> Credentials:
    """The pod's service account when running in a pod, else the kubeconfig (KUBECONFIG or
    ~/.kube/config), with exec-plugin credentials already obtained."""
    env = os.environ if env is None else env
    found = in_cluster(env) or from_kubeconfig(env=env)
    return refreshed(found) if found.exec_plugin else found


def in_cluster(env: Mapping[str, str], root: Path = SERVICE_ACCOUNT) -> Credentials | None:
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    token = root / "token"
    if not host or not port or not token.exists():
        return None
    if ":" in host:  # IPv6
        host = f"[{host}]"
    ca, ns = root / "ca.crt", root / "namespace"
    return Credentials(
        server=f"https://{host}:{port}",
        ca_data=ca.read_bytes() if ca.exists() else None,
        token_file=token,
        namespace=ns.read_text().strip() if ns.exists() else None,
    )


def kubeconfig_paths(env: Mapping[str, str]) -> list[Path]:
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [Path(p).expanduser() for p in listed]
    return [Path(env.get("HOME") or Path.home()) / ".kube" / "config"]


# A merged kubeconfig: per section (contexts, clusters, users), name -> (entry, its file's folder).
_Sections = dict[str, dict[str, tuple[dict[str, Any], Path]]]


def _merge_kubeconfigs(paths: list[Path]) -> tuple[str | None, _Sections]:
    """The current-context and the named entries of ``paths``, the first file to set one winning."""
    current: str | None = None
    sections: _Sections = {"contexts": {}, "clusters": {}, "users": {}}
    read_any = False
    for path in paths:
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except FileNotFoundError:
            continue
        except (OSError, yaml.YAMLError) as exc:
            raise CredentialsError(f"kubeconfig {path}: {exc}") from None
        read_any = True
        current = current or doc.get("current-context") or None
        for section, key in (("contexts", "context"), ("clusters", "cluster"), ("users", "user")):
            for item in doc.get(section) or []:
                sections[section].setdefault(item["name"], (item.get(key) or {}, path.parent))
    if not read_any:
        raise CredentialsError(
            "no Kubernetes credentials: not in a pod, and no kubeconfig at "
            + os.pathsep.join(str(p) for p in paths)
        )
    return current, sections


def _refuse_unsupported(
    cluster: Mapping[str, Any], user: Mapping[str, Any], ctx: Mapping[str, Any]
) -> None:
    """Kubeconfig features this client does not implement fail loudly rather than half-work."""
    if user.get("auth-provider"):
        raise CredentialsError(
            f"kubeconfig user {ctx.get('user')}: auth-provider is not supported; use an exec plugin"
        )
    where = f"kubeconfig cluster {ctx['cluster']}"
    if cluster.get("tls-server-name"):
        raise CredentialsError(f"{where}: tls-server-name is not supported")
    proxy = cluster.get("proxy-url")
    if proxy and not str(proxy).startswith(("http://", "https://")):
        raise CredentialsError(f"{where}: only an HTTP(S) proxy-url is supported: {proxy}")
    if not cluster.get("server"):
        raise CredentialsError(f"{where} has no server")


def from_kubeconfig(
    paths: list[Path] | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Credentials:
    """The current (or named) context of the merged kubeconfig files; the first file to set a
    name wins, as kubectl merges them. Relative file names resolve against their own file."""
    env = os.environ if env is None else env
    paths = paths or kubeconfig_paths(env)
    current, sections = _merge_kubeconfigs(paths)
    name = context or current
    if not name or name not in sections["contexts"]:
        raise CredentialsError(f"kubeconfig: context {name or '(current-context unset)'} not found")
    ctx, _ = sections["contexts"][name]
    if ctx.get("cluster") not in sections["clusters"]:
        raise CredentialsError(f"kubeconfig: cluster {ctx.get('cluster')} of {name} not found")
    cluster, cluster_dir = sections["clusters"][ctx["cluster"]]
    user, user_dir = sections["users"].get(ctx.get("user") or "", ({}, Path(".")))
    _refuse_unsupported(cluster, user, ctx)
    token_file = user.get("tokenFile")
    return Credentials(
        server=str(cluster["server"]).rstrip("/"),
        ca_data=_data(cluster, "certificate-authority", cluster_dir),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        proxy_url=cluster.get("proxy-url") or None,
        token=user.get("token"),
        token_file=_resolve(token_file, user_dir) if token_file else None,
        cert_data=_data(user, "client-certificate", user_dir),
        key_data=_data(user, "client-key", user_dir),
        username=user.get("username"),
        password=user.get("password"),
        namespace=ctx.get("namespace"),
        exec_plugin=_exec_plugin(user["exec"], cluster, user_dir) if user.get("exec") else None,
    )


def _resolve(name: str, base: Path) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() else base / path


def _data(section: Mapping[str, Any], key: str, base: Path) -> bytes | None:
    if section.get(f"{key}-data"):
        return base64.b64decode(section[f"{key}-data"])
    if section.get(key):
        path = _resolve(section[key], base)
        try:
            return path.read_bytes()
        except OSError as exc:
            raise CredentialsError(f"kubeconfig {key} {path}: {exc.strerror}") from None
    return None


def _exec_plugin(spec: Mapping[str, Any], cluster: Mapping[str, Any], base: Path) -> ExecPlugin:
    if not spec.get("command"):
        raise CredentialsError("kubeconfig exec plugin has no command")
    command = str(spec["command"])
    info = None
    if spec.get("provideClusterInfo"):
        info = {
            "server": cluster.get("server"),
            "certificate-authority-data": cluster.get("certificate-authority-data"),
            "insecure-skip-tls-verify": bool(cluster.get("insecure-skip-tls-verify")),
            "config": (cluster.get("extensions") or [{}])[0].get("extension"),
        }
    return ExecPlugin(
        command=command,
        args=tuple(str(a) for a in spec.get("args") or ()),
        env=tuple((str(e["name"]), str(e["value"])) for e in spec.get("env") or ()),
        api_version=spec.get("apiVersion") or ExecPlugin.api_version,
        cluster=info,
        # kubectl resolves a command with a slash against the kubeconfig's directory.
        workdir=base if "/" in command and not Path(command).is_absolute() else None,
    )


def refreshed(creds: Credentials) -> Credentials:
    """Credentials with what the exec plugin gives now (token or client certificate)."""
    plugin = creds.exec_plugin
    if plugin is None:
        return creds
    spec: dict[str, Any] = {"interactive": False}
    if plugin.cluster is not None:
        spec["cluster"] = plugin.cluster
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
    command = str(plugin.workdir / plugin.command) if plugin.workdir else plugin.command
    try:
        done = subprocess.run(
            [command, *plugin.args],
            env={**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)},
            capture_output=True,
            text=True,
            timeout=EXEC_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CredentialsError(f"exec plugin {plugin.command}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise CredentialsError(f"exec plugin {plugin.command} exited {done.returncode}: {last}")
    try:
        status = json.loads(done.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        raise CredentialsError(f"exec plugin {plugin.command} printed no ExecCredential") from None
    expiry = status.get("expirationTimestamp")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not status.get("token") and not (cert and key):
        raise CredentialsError(f"exec plugin {plugin.command} gave neither token nor certificate")
    return replace(
        creds,
        token=status.get("token") or creds.token,
        cert_data=cert.encode() if cert else creds.cert_data,
        key_data=key.encode() if key else creds.key_data,
        expiration=dt.datetime.fromisoformat(expiry.replace("Z", "+00:00")) if expiry else None,
    )


def bearer_token(creds: Credentials) -> str | None:
    """The token to send now: the token file's content when there is one (it rotates)."""
    if creds.token_file is not None:
        try:
            return creds.token_file.read_text().strip() or None
        except OSError as exc:
            raise CredentialsError(f"token file {creds.token_file}: {exc.strerror}") from None
    return creds.token
