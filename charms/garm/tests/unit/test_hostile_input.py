"""Hostile values of external-url, port and reconcile-interval (issue #20, "Input").

Each must end in a Blocked naming the option, or be normalised to a value every consumer (GARM,
the certificate request) accepts; no hook may crash. The bad-value table
(test_bad_values.py) proves the Blocked side through a serving unit; these prove the
normalisation and the crash that a non-ASCII host caused once `certificates` was related.
"""

from __future__ import annotations

import dataclasses

import pytest
import test_charm_tls
from charmlibs.interfaces.tls_certificates import CertificateSigningRequest
from ops import testing
from test_bad_values import CONFIG_ROWS
from test_charm_tls import TlsWalk

import charm
from charm_config import InvalidConfigError, parse_config
from doubles.tls_publication import certificates_relation, csr_pem, requested

# The TLS walk's fixtures, shared rather than copied.
tls_walk = test_charm_tls.tls_walk
garm_port = test_charm_tls.garm_port


def test_a_non_ascii_external_url_host_is_requested_idna_encoded(tls_walk: TlsWalk):
    """Arrange: a leader with the certificates relation. Act: external-url with a non-ASCII host.

    Assert: the hook does not crash and GARM's status is not Blocked; the CSR names the host
    IDNA-encoded (X.509 takes A-labels only).
    """
    tls_walk.serve(None)
    tls_walk.state = dataclasses.replace(
        tls_walk.state,
        config={"port": tls_walk.port, "external-url": "https://gärm.example.com:8443"},
    )

    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.config_changed(), tls_walk.state)

    csr = CertificateSigningRequest.from_string(csr_pem(requested(tls_walk.state)))
    assert csr.sans_dns == {"xn--grm-qla.example.com", "localhost"}
    assert not isinstance(tls_walk.state.unit_status, testing.BlockedStatus)


def test_a_non_ascii_external_url_reaches_garm_idna_encoded(tls_walk: TlsWalk):
    """Arrange: a leader with the certificates relation; GARM on plain HTTP.

    Act: external-url with a non-ASCII host, then the certificate arrives.
    Assert: GARM's callback URL carries the IDNA-encoded host, port and path kept.
    """
    tls_walk.serve(None)
    tls_walk.state = dataclasses.replace(
        tls_walk.state,
        config={"port": tls_walk.port, "external-url": "https://GÄRM.example.com:8443/ci"},
    )
    tls_walk.state = tls_walk.ctx.run(tls_walk.ctx.on.config_changed(), tls_walk.state)
    tls_walk.issue()

    tls_walk.changed()

    assert tls_walk.garm.controller_urls()["callback_url"] == (
        "https://xn--grm-qla.example.com:8443/ci/api/v1/callbacks"
    )


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("https://gärm.example.com", "https://xn--grm-qla.example.com"),
        ("https://bücher.example:8443/x/", "https://xn--bcher-kva.example:8443/x"),
        ("https://GARM.example.com:8443/ci", "https://GARM.example.com:8443/ci"),
        ("https://garm.example.com./ci", "https://garm.example.com./ci"),
        ("http://[fd00::5]:9997", "http://[fd00::5]:9997"),
        ("http://10.1.2.3:9997/a.b/..c", "http://10.1.2.3:9997/a.b/..c"),
    ],
)
def test_external_url_hosts_are_normalised_to_a_labels(given: str, normalised: str):
    """Arrange: a URL whose host is non-ASCII, or ASCII. Act: parse.

    Assert: a non-ASCII host is IDNA-encoded; an ASCII URL stays as the operator spelled it.
    """
    assert parse_config({"external-url": given}).external_url == normalised


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("external-url", "https://g.example/" + "a" * 200_000, "must be at most 1024 characters"),
        ("external-url", "https://garm.example.com:", "must have a port of 1-65535, or none"),
        ("external-url", "http://[fd00::5]:", "must have a port of 1-65535, or none"),
        ("external-url", "https://garm.example.com/a/../admin", "must not have . or .. in its"),
        ("external-url", "https://garm.example.com/..", "must not have . or .. in its path"),
        ("external-url", "https://garm.example.com/./x", "must not have . or .. in its path"),
        ("external-url", "https://garm.example.com/%2E%2e/x", "must not have . or .. in its"),
        ("external-url", "https://garm!.example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://garm..example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://-garm.example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://xn--a.example.com", "must have a DNS name or an IP address"),
        ("external-url", "https://" + "a" * 64 + ".example", "must have a DNS name or an IP"),
        ("external-url", "https://" + "a." * 130 + "example", "must have a DNS name or an IP"),
        ("port", 1, "must be 1024-65535 (GARM runs unprivileged)"),
        ("port", 1023, "must be 1024-65535 (GARM runs unprivileged)"),
        ("reconcile-interval", "1s", "must be 0 or at least 30s"),
        ("reconcile-interval", "29s", "must be 0 or at least 30s"),
    ],
)
def test_hostile_values_are_refused_naming_the_option(option: str, value: object, reason: str):
    """Arrange: a hostile value. Act: parse.

    Assert: InvalidConfigError naming the option and the rule, never echoing the value.
    """
    with pytest.raises(InvalidConfigError) as caught:
        parse_config({option: value})

    assert str(caught.value).startswith(f"invalid config {option}: {reason}")
    assert len(str(caught.value)) <= 120


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("port", 1024),
        ("reconcile-interval", "30s"),
        ("reconcile-interval", "0"),
        ("external-url", "https://g.example/" + "a" * (1024 - 18)),
    ],
)
def test_values_at_the_new_bounds_are_accepted(option: str, value: object):
    """Arrange: a value at a new lower or upper bound. Act: parse. Assert: no error."""
    parse_config({option: value})


# The census: every hostile config value, one outcome each ----------------------------------

# Values the charm normalises rather than refuses: (option, given, what GARM and the CA get).
NORMALISED = (
    ("external-url", "https://gärm.example.com", "https://xn--grm-qla.example.com"),
    ("external-url", "https://garm.example.com/", "https://garm.example.com"),
    ("external-url", " https://garm.example.com ", "https://garm.example.com"),
)


def test_hostile_config_values_report_no_crash_and_no_silent_accept(
    ctx: testing.Context[charm.GarmCharm],
    resources: frozenset[testing.Resource],
):
    """Arrange: every bad value of the bad-value table, and the values normalised instead.

    Act: config-changed on a leader with each (resources attached: an accepted value runs the
    whole reconcile, and meets no GARM; `certificates` related for the normalised ones).
    Assert: the report counts 0 crashes and 0 silent accepts: each bad value is Blocked naming
    its option, each normalised one is parsed to the form every consumer accepts (and its hook,
    with `certificates` related, completes).
    """
    report: dict[str, list[str]] = {"crash": [], "blocked": [], "normalised": [], "silent": []}
    for row in CONFIG_ROWS:
        state = testing.State(leader=True, config={row.name: row.value}, resources=resources)
        try:
            out = ctx.run(ctx.on.config_changed(), state)
        except testing.errors.UncaughtCharmError:
            report["crash"].append(str(row))
            continue
        status = out.unit_status
        named = status.message.startswith(f"invalid config {row.name}: ")
        kind = "blocked" if isinstance(status, testing.BlockedStatus) and named else "silent"
        report[kind].append(str(row))
    for option, given, normalised in NORMALISED:
        # With `certificates` related, the host goes into the certificate request too.
        state = testing.State(
            leader=True,
            config={option: given},
            resources=resources,
            relations=[certificates_relation()],
        )
        try:
            ctx.run(ctx.on.config_changed(), state)
        except testing.errors.UncaughtCharmError:
            report["crash"].append(f"{option}={given!r}")
            continue
        parsed = parse_config({option: given})
        kind = "normalised" if parsed.external_url == normalised else "silent"
        report[kind].append(f"{option}={given!r}")

    counts = {kind: len(values) for kind, values in report.items()}
    assert (report["crash"], report["silent"]) == ([], []), counts
    assert counts == {
        "crash": 0,
        "blocked": len(CONFIG_ROWS),
        "normalised": len(NORMALISED),
        "silent": 0,
    }
