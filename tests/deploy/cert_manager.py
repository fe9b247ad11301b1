"""What cert-manager does for the Issuers and Certificates of a rendered
overlay (pod_smoke_test.py), with openssl: each Certificate's Secret
(type kubernetes.io/tls) with tls.crt, tls.key and ca.crt, as cert-manager
writes it.

  Issuer spec.selfSigned  the certificate signs itself; ca.crt is itself
  Issuer spec.ca          signed with the key of the Secret spec.ca.secretName
                          (made first, from its own Certificate); ca.crt is
                          that Secret's certificate

Subject: commonName; subjectAltName: dnsNames; isCA: a CA (basic
constraints, keyCertSign); usages: key and extended key usages; the
private key: ECDSA (P-256, P-384) or RSA of privateKey's size; validity:
spec.duration (cert-manager's default 90 days); tls.key PKCS#1 or SEC1
unless privateKey.encoding is PKCS8."""
import os
import re
import subprocess
import tempfile

USAGES = {"server auth": ("extendedKeyUsage", "serverAuth"),
          "client auth": ("extendedKeyUsage", "clientAuth"),
          "digital signature": ("keyUsage", "digitalSignature"),
          "key encipherment": ("keyUsage", "keyEncipherment"),
          "cert sign": ("keyUsage", "keyCertSign"),
          "crl sign": ("keyUsage", "cRLSign")}


class CertManagerError(Exception):
    """A Certificate or Issuer cert-manager would not issue from."""


def _openssl(args, work):
    result = subprocess.run(["openssl", *args], cwd=work, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise CertManagerError(f"openssl {' '.join(args)}: {result.stdout}")


def _days(duration):
    """cert-manager's duration (Go's, e.g. 2160h or 87600h0m0s) in whole days."""
    if not duration:
        return 90
    hours = sum(float(n) * {"h": 1, "m": 1 / 60, "s": 1 / 3600}[u]
                for n, u in re.findall(r"([0-9.]+)([hms])", duration))
    return max(1, int(hours // 24))


def _key_args(spec):
    key = spec.get("privateKey") or {}
    algorithm = key.get("algorithm", "RSA")
    if algorithm == "ECDSA":
        curve = {256: "P-256", 384: "P-384", 521: "P-521"}.get(int(key.get("size", 256)))
        if curve is None:
            raise CertManagerError(f"privateKey.size {key.get('size')} is no ECDSA curve")
        return ["-newkey", "ec", "-pkeyopt", f"ec_paramgen_curve:{curve}"]
    if algorithm == "RSA":
        return ["-newkey", f"rsa:{int(key.get('size', 2048))}"]
    raise CertManagerError(f"privateKey.algorithm {algorithm} is not emulated")


def _encode_key(spec, directory):
    """tls.key as cert-manager writes it: PKCS#1 (RSA) or SEC1 (ECDSA) by
    default, PKCS#8 with privateKey.encoding PKCS8 (openssl's own)."""
    key = spec.get("privateKey") or {}
    if key.get("encoding", "PKCS1") == "PKCS8":
        return
    if key.get("algorithm", "RSA") == "ECDSA":
        _openssl(["ec", "-in", "tls.key", "-out", "tls.key"], directory)
    else:
        _openssl(["rsa", "-in", "tls.key", "-out", "tls.key", "-traditional"], directory)


def _extensions(spec):
    """The X.509v3 extensions of the Certificate's spec, as openssl
    config lines."""
    lines = []
    if spec.get("isCA"):
        lines += ["basicConstraints = critical, CA:TRUE", "keyUsage = critical, keyCertSign, cRLSign, digitalSignature"]
    else:
        usages = spec.get("usages") or ["digital signature", "key encipherment"]
        unknown = [u for u in usages if u not in USAGES]
        if unknown:
            raise CertManagerError(f"usages {unknown} are not emulated")
        for extension in ("keyUsage", "extendedKeyUsage"):
            values = [v for u in usages for e, v in [USAGES[u]] if e == extension]
            if extension == "keyUsage":
                values = values or ["digitalSignature", "keyEncipherment"]
            if values:
                lines.append(f"{extension} = {', '.join(values)}")
        lines.append("basicConstraints = CA:FALSE")
    names = spec.get("dnsNames") or []
    if names:
        lines.append("subjectAltName = " + ", ".join(f"DNS:{n}" for n in names))
    return "\n".join(lines) + "\n"


def _issue(certificate, issuer, secrets, work):
    """The Secret's data for one Certificate (PEM strings)."""
    spec = certificate["spec"]
    name = certificate["metadata"]["name"]
    subject = f"/CN={spec.get('commonName') or (spec.get('dnsNames') or [name])[0]}"
    directory = tempfile.mkdtemp(prefix=f"{name}-", dir=work)
    with open(os.path.join(directory, "ext.cnf"), "w") as f:
        f.write(_extensions(spec))
    days = str(_days(spec.get("duration")))
    issuer_spec = issuer["spec"]
    if "selfSigned" in issuer_spec:
        _openssl(["req", "-x509", "-nodes", *_key_args(spec), "-keyout", "tls.key", "-out", "tls.crt",
                  "-subj", subject, "-days", days] +
                 [arg for line in _extensions(spec).splitlines() for arg in ("-addext", line.replace(" = ", "="))],
                 directory)
        ca = None
    elif "ca" in issuer_spec:
        ca = secrets.get(issuer_spec["ca"]["secretName"])
        if ca is None:
            return None  # its CA is not issued yet
        for key in ("tls.crt", "tls.key"):
            with open(os.path.join(directory, f"ca-{key}"), "w") as f:
                f.write(ca[key])
        _openssl(["req", "-new", "-nodes", *_key_args(spec), "-keyout", "tls.key", "-out", "tls.csr",
                  "-subj", subject], directory)
        _openssl(["x509", "-req", "-in", "tls.csr", "-CA", "ca-tls.crt", "-CAkey", "ca-tls.key",
                  "-CAcreateserial", "-days", days, "-extfile", "ext.cnf", "-out", "tls.crt"], directory)
    else:
        raise CertManagerError(f"Issuer {issuer['metadata']['name']}: only selfSigned and ca issuers are emulated")
    _encode_key(spec, directory)
    data = {key: open(os.path.join(directory, key)).read() for key in ("tls.crt", "tls.key")}
    data["ca.crt"] = data["tls.crt"] if ca is None else ca["tls.crt"]
    return data


def issue_certificates(objects, work):
    """The Secrets cert-manager would make for the Certificates among
    `objects` (Kubernetes objects as dicts), in an order where each CA
    comes before what it signs. Raises CertManagerError for an issuer that
    is missing or not emulated, or a CA that no Certificate makes."""
    issuers = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Issuer"}
    pending = [o for o in objects if o["kind"] == "Certificate"]
    secrets = {}
    while pending:
        left = []
        for certificate in pending:
            ref = certificate["spec"].get("issuerRef") or {}
            if ref.get("kind", "Issuer") != "Issuer" or ref.get("name") not in issuers:
                raise CertManagerError(f"Certificate {certificate['metadata']['name']}: issuer "
                                       f"{ref.get('kind', 'Issuer')} {ref.get('name')} is not in the render")
            data = _issue(certificate, issuers[ref["name"]], secrets, work)
            if data is None:
                left.append(certificate)
            else:
                secrets[certificate["spec"]["secretName"]] = data
        if len(left) == len(pending):
            raise CertManagerError("no CA Secret for the issuers of: " +
                                   ", ".join(c["metadata"]["name"] for c in left))
        pending = left
    return [{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
             "metadata": {"name": name}, "stringData": data} for name, data in secrets.items()]
