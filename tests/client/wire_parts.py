"""Parts of the wire's tests: a raw-socket server answering with bytes given in advance (a
Source that breaks HTTP/1.1 in a chosen way), and a self-signed certificate."""

from __future__ import annotations

import datetime
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: Seconds a connection or the listener waits for its peer before giving up.
PATIENCE = 10.0


@dataclass
class Canned:
    """The URL to request, and the request heads received, in order."""

    url: str
    requests: list[bytes] = field(default_factory=list)


def _serve_one(connection: socket.socket, answers: tuple[bytes, ...], keep_open: bool,
               requests: list[bytes]) -> None:
    with connection:
        connection.settimeout(PATIENCE)
        received = b""
        try:
            for answer in answers:
                while b"\r\n\r\n" not in received:
                    if not (data := connection.recv(4096)):
                        return
                    received += data
                request, _, received = received.partition(b"\r\n\r\n")
                requests.append(request)
                connection.sendall(answer)
            while keep_open and connection.recv(4096):
                pass  # whatever else arrives on this connection is left unanswered
        except OSError:
            return


@contextmanager
def canned(*connections: bytes | tuple[bytes, ...], keep_open: bool = False
           ) -> Iterator[Canned]:
    """A server on 127.0.0.1 whose n-th connection gets ``connections[n]``: an answer to its
    first request, or a tuple of answers to its first requests in turn. Then the connection is
    closed, or with ``keep_open`` held open (unanswered) until the client closes it."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(PATIENCE)
    served = Canned(f"http://127.0.0.1:{listener.getsockname()[1]}/x")
    handlers: list[threading.Thread] = []

    def accept() -> None:
        for answers in connections:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            handler = threading.Thread(
                target=_serve_one, daemon=True,
                args=(connection, answers if isinstance(answers, tuple) else (answers,),
                      keep_open, served.requests))
            handler.start()
            handlers.append(handler)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield served
    finally:
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the acceptor (Linux)
        listener.close()
        acceptor.join(PATIENCE)
        for handler in handlers:
            handler.join(PATIENCE)


def self_signed(directory: Path, name: x509.GeneralName) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` (that a client can trust as its own authority)
    and its key, as PEM files in ``directory``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "resourcesync test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([name]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file
