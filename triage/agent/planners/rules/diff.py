"""What changed: the failing revision's pod template against the last healthy one.

Field by field, the things a release changes and an SRE checks first: images, env vars
(added, removed, renamed, changed — values redacted upstream), command and args, resources,
probes, volumes and the ConfigMaps/Secrets they reference, the ServiceAccount; then every other
setting of the template, path by path (`dnsPolicy`, `securityContext.runAsUser`, a port, an
emptyDir's medium, a label), so nothing a release changed goes unsaid. A rename is an env var
removed and another added with the same value, or with the same shape of name.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.read import payloads as p


@dataclass(frozen=True)
class Change:
    what: str  # image, env, args, resources, probe, volume, service_account, setting, label
    container: str
    before: str | None
    after: str | None
    text: str


def _env(spec: p.ContainerSpec) -> dict[str, str]:
    out = {}
    for e in spec["env"]:
        value = e.get("value") or e.get("configmap") or e.get("secret") or e.get("field") or ""
        out[e["name"]] = value
    return out


def _probe_text(probe: p.Probe | None) -> str:
    if not probe:
        return "none"
    parts = [str(probe.get("kind", "?"))]
    if probe.get("path"):
        parts.append(str(probe["path"]))
    if probe.get("port") is not None:
        parts.append(f"port {probe['port']}")
    for key in ("initial_delay_s", "period_s", "timeout_s", "failure_threshold"):
        if probe.get(key) is not None:
            parts.append(f"{key.removesuffix('_s')} {probe[key]}")
    return " ".join(parts)


def _container(old: p.ContainerSpec, new: p.ContainerSpec) -> list[Change]:
    name = new["name"]
    out: list[Change] = []
    if old["image"] != new["image"]:
        out.append(
            Change(
                "image", name, old["image"], new["image"], f"image {old['image']} → {new['image']}"
            )
        )
    before, after = _env(old), _env(new)
    removed = [k for k in before if k not in after]
    added = [k for k in after if k not in before]
    for gone in list(removed):
        same_value = [a for a in added if before[gone] and after[a] == before[gone]]
        candidates = same_value or [a for a in added if _similar(a, gone)]
        if candidates:
            twin = candidates[0]
            out.append(Change("env", name, gone, twin, f"env var {gone} renamed to {twin}"))
            removed.remove(gone)
            added.remove(twin)
    out += [Change("env", name, k, None, f"env var {k} removed") for k in removed]
    out += [Change("env", name, None, k, f"env var {k} added") for k in added]
    for k in before.keys() & after.keys():
        if before[k] != after[k]:
            out.append(
                Change(
                    "env",
                    name,
                    before[k],
                    after[k],
                    f"env var {k} changed: {before[k]!r} → {after[k]!r}",
                )
            )
    for key in ("command", "args"):
        if old[key] != new[key]:
            b, a = " ".join(old[key]), " ".join(new[key])
            out.append(Change(key, name, b, a, f"{key} {b!r} → {a!r}"))
    for kind in ("limits", "requests"):
        for res in sorted(set(old[kind]) | set(new[kind])):
            was, now = old[kind].get(res), new[kind].get(res)
            if was != now:
                out.append(Change("resources", name, was, now, f"{kind}.{res} {was} → {now}"))
    for probe in ("liveness", "readiness", "startup"):
        b, a = _probe_text(old[probe]), _probe_text(new[probe])
        if b != a:
            out.append(Change("probe", name, b, a, f"{probe} probe {b} → {a}"))
    return out


def _similar(a: str, b: str) -> bool:
    """DATABASE_URL / DB_URL, REDIS_HOST / CACHE_HOST: same suffix, different prefix."""
    sa, sb = a.split("_"), b.split("_")
    return len(sa) > 1 and len(sb) > 1 and sa[-1] == sb[-1]


def diff(old: p.PodTemplate, new: p.PodTemplate) -> list[Change]:
    out: list[Change] = []
    olds = {c["name"]: c for c in old["containers"]}
    for c in new["containers"]:
        if c["name"] in olds:
            out += _container(olds[c["name"]], c)
        else:
            out.append(
                Change("container", c["name"], None, c["image"], f"container {c['name']} added")
            )
    if old["service_account"] != new["service_account"]:
        out.append(
            Change(
                "service_account",
                "",
                old["service_account"],
                new["service_account"],
                f"serviceAccount {old['service_account']} → {new['service_account']}",
            )
        )
    before = {f"{v.get('kind')}:{v.get('ref') or v.get('name')}" for v in old["volumes"]}
    after = {f"{v.get('kind')}:{v.get('ref') or v.get('name')}" for v in new["volumes"]}
    out += [Change("volume", "", v, None, f"volume {v} removed") for v in sorted(before - after)]
    out += [Change("volume", "", None, v, f"volume {v} added") for v in sorted(after - before)]
    images = [(c.before or "", c.after or "") for c in out if c.what == "image"]
    return out + [
        c
        for c in settings_diff(old.get("settings") or {}, new.get("settings") or {})
        # a version label that follows the image's tag says nothing the image does not
        if not (
            c.what == "label"
            and any((c.after or "?") in a and (c.before or "?") in b for b, a in images)
        )
    ]


# A volume's source is diffed above as the volume itself (kind and what it names).
_AS_VOLUMES = (".configMap.name", ".secret.secretName", ".persistentVolumeClaim.claimName")


def settings_diff(old: dict[str, str], new: dict[str, str]) -> list[Change]:
    """Every other setting of the template that differs (tools/read/shapes.py `settings`):
    spec fields first, labels last (a release's version label changes with every release)."""
    out: list[Change] = []
    for path in sorted(old.keys() | new.keys(), key=lambda k: (k.startswith("labels."), k)):
        was, now = old.get(path), new.get(path)
        if was == now or path.endswith(_AS_VOLUMES):
            continue
        container = path.partition("[")[2].partition("]")[0] if "containers[" in path else ""
        if was is None:
            text = f"{path} set to {now}"
        elif now is None:
            text = f"{path} {was} removed"
        else:
            text = f"{path} {was} → {now}"
        out.append(
            Change("label" if path.startswith("labels.") else "setting", container, was, now, text)
        )
    return out
