"""Certificates issued by the operator from a user's CA Secret (``tls.caSecretName``), and the
pure verdict on when an issued one must be replaced.

Like ``generate``, the one random part (a fresh private key) runs only when a Secret is
(re)issued; the clock comes in as ``now``. What it writes has cert-manager's Secret shape
(``tls.crt``, ``tls.key``, ``ca.crt``, ``tls-combined.pem``), so the pods read both alike.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mongobench.mongocluster.build.tls import (
    CA_KEY,
    CERT_KEY,
    COMBINED_KEY,
    DURATION_HOURS,
    PRIVATE_KEY,
    RENEW_BEFORE_HOURS,
    CertificateRequest,
)

# Tolerates members whose clock is a little behind the operator's.
BACKDATE = datetime.timedelta(minutes=5)


class CAError(ValueError):
    """The CA Secret cannot sign: missing keys, not PEM, not a CA, key and certificate apart."""


CAKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


def load_ca(values: Mapping[str, str], secret: str) -> tuple[x509.Certificate, CAKey]:
    """The CA certificate and key of the user's Secret (keys tls.crt and tls.key)."""
    missing = [k for k in (CERT_KEY, PRIVATE_KEY) if not values.get(k)]
    if missing:
        raise CAError(f"Secret {secret} has no {' or '.join(missing)}: a CA needs both")
    try:
        cert = x509.load_pem_x509_certificate(values[CERT_KEY].encode())
        key = serialization.load_pem_private_key(values[PRIVATE_KEY].encode(), password=None)
    except ValueError as exc:
        raise CAError(f"Secret {secret}: tls.crt and tls.key must be unencrypted PEM") from exc
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise CAError(f"Secret {secret}: tls.key must be an RSA or ECDSA key")
    try:
        constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    except x509.ExtensionNotFound:
        constraints = None
    if constraints is None or not constraints.ca:
        raise CAError(f"Secret {secret}: tls.crt is not a CA certificate (basicConstraints CA)")
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if cert.public_key().public_bytes(*spki) != key.public_key().public_bytes(*spki):
        raise CAError(f"Secret {secret}: tls.key is not the key of tls.crt")
    return cert, key


def _san(request: CertificateRequest) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in request.dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in request.ip_addresses]
    return names


def issue(
    ca_values: Mapping[str, str],
    ca_secret: str,
    request: CertificateRequest,
    now: datetime.datetime,
    bundle: str | None = None,
) -> dict[str, str]:
    """A fresh key and a certificate for `request` signed by the CA: the Secret's values.
    `bundle`: the CAs members trust (ca.crt), when more than the signing one (tls_ca)."""
    ca_cert, ca_key = load_ca(ca_values, ca_secret)
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _leaf(request, ca_cert.subject, key.public_key(), now)
    if san := _san(request):
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        CERT_KEY: cert_pem,
        PRIVATE_KEY: key_pem,
        CA_KEY: bundle or ca_values[CERT_KEY],
        COMBINED_KEY: key_pem + cert_pem,  # cert-manager's CombinedPEM order: key, then chain
    }


def _leaf(
    request: CertificateRequest,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
) -> x509.CertificateBuilder:
    """A member's or a client's certificate, not a CA's, valid DURATION_HOURS from a little
    before `now`; its names other than the subject are the caller's."""
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, request.organization),
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, request.organizational_unit),
            x509.NameAttribute(NameOID.COMMON_NAME, request.common_name),
        ]
    )
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH]
    if request.server:
        usages.insert(0, ExtendedKeyUsageOID.SERVER_AUTH)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + datetime.timedelta(hours=DURATION_HOURS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )


def signed_by(values: Mapping[str, str] | None, ca_pem: str) -> bool:
    """Whether the Secret's certificate was signed by the CA (its signature checks out)."""
    try:
        cert = x509.load_pem_x509_certificate((values or {}).get(CERT_KEY, "").encode())
        ca = x509.load_pem_x509_certificate(ca_pem.encode())
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def renewal_time(values: Mapping[str, str] | None) -> datetime.datetime | None:
    """When an issued certificate is due for renewal: RENEW_BEFORE_HOURS before its end (2/3
    of its 90 days, as cert-manager renews by default); None when there is none to read."""
    try:
        cert = x509.load_pem_x509_certificate((values or {}).get(CERT_KEY, "").encode())
    except ValueError:
        return None
    return cert.not_valid_after_utc - datetime.timedelta(hours=RENEW_BEFORE_HOURS)


def reissue_reason(
    values: Mapping[str, str] | None,
    ca_values: Mapping[str, str],
    request: CertificateRequest,
    now: datetime.datetime,
) -> str | None:
    """Why an issued Secret must be replaced (None: keep it): absent, another CA, names or
    subject that no longer match, or within RENEW_BEFORE_HOURS of its end."""
    if not values or not all(values.get(k) for k in (CERT_KEY, PRIVATE_KEY, CA_KEY, COMBINED_KEY)):
        return "not issued yet"
    if values[CA_KEY].strip() != ca_values.get(CERT_KEY, "").strip():
        return "the CA changed"
    try:
        cert = x509.load_pem_x509_certificate(values[CERT_KEY].encode())
    except ValueError:
        return "its certificate is not PEM"
    return _mismatch(cert, request, now)


def _mismatch(
    cert: x509.Certificate, request: CertificateRequest, now: datetime.datetime
) -> str | None:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names: list[x509.GeneralName] = list(san)
    except x509.ExtensionNotFound:
        names = []
    if sorted(map(str, names)) != sorted(map(str, _san(request))):
        return "its names changed"
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cn or cn[0].value != request.common_name:
        return "its subject changed"
    if cert.not_valid_after_utc - now <= datetime.timedelta(hours=RENEW_BEFORE_HOURS):
        return "it expires within the renewal window"
    return None
