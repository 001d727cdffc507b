"""Server side of SCRAM-SHA-256 (RFC 5802/7677), so the mongod model authenticates the
operator's real pymongo client with the passwords of the users it created, as mongod does."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass

ITERATIONS = 4096


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


@dataclass
class _Conversation:
    user: str
    passwords: tuple[str, ...]  # any of them: __system with a keyfile listing several keys
    salt: bytes
    client_first_bare: str
    server_first: str


class ScramServer:
    """One per model: saslStart/saslContinue conversations by conversationId."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._conversations: dict[int, _Conversation] = {}

    def start(
        self, payload: bytes, lookup: Mapping[str, str | tuple[str, ...]]
    ) -> tuple[int, bytes] | None:
        """client-first -> (conversationId, server-first); None when the user is unknown.
        A user may have several passwords (mongod's __system with a keyfile of several keys
        accepts a proof made with any of them)."""
        message = payload.decode()
        bare = message.split(",", 2)[2]  # drop the gs2 header "n,,"
        fields = dict(item.split("=", 1) for item in bare.split(","))
        user = fields["n"].replace("=2C", ",").replace("=3D", "=")
        if user not in lookup:
            return None
        salt = os.urandom(16)
        server_first = (
            f"r={fields['r']}{base64.b64encode(os.urandom(18)).decode()},"
            f"s={base64.b64encode(salt).decode()},i={ITERATIONS}"
        )
        cid = next(self._ids)
        found = lookup[user]
        passwords = (found,) if isinstance(found, str) else found
        self._conversations[cid] = _Conversation(user, passwords, salt, bare, server_first)
        return cid, server_first.encode()

    def user_of(self, cid: int) -> str:
        return self._conversations[cid].user

    def finish(self, cid: int, payload: bytes) -> bytes | None:
        """client-final -> server-final (v=...); None when the proof is wrong."""
        conv = self._conversations.pop(cid, None)
        if conv is None:
            return None
        final = payload.decode()
        without_proof, _, proof_field = final.rpartition(",p=")
        for password in conv.passwords:
            answer = self._verify(conv, password, without_proof, proof_field)
            if answer is not None:
                return answer
        return None

    @staticmethod
    def _verify(
        conv: _Conversation, password: str, without_proof: str, proof_field: str
    ) -> bytes | None:
        salted = hashlib.pbkdf2_hmac("sha256", password.encode(), conv.salt, ITERATIONS)
        client_key = _hmac(salted, b"Client Key")
        stored_key = _h(client_key)
        auth_message = f"{conv.client_first_bare},{conv.server_first},{without_proof}".encode()
        signature = _hmac(stored_key, auth_message)
        proof = base64.b64decode(proof_field)
        if len(proof) != len(signature):  # another mechanism (SCRAM-SHA-1): not this server's
            return None
        recovered = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(_h(recovered), stored_key):
            return None
        server_signature = _hmac(_hmac(salted, b"Server Key"), auth_message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()
