#!/usr/bin/python3
"""check_k8s.py FILE... — a structural check of the Kubernetes manifests in
contrib/kubernetes (tests/deploy/run runs it).

Debian 12 packages no Kubernetes schema validator (no kubeconform, no
kubeval), and `kubectl --dry-run=client` needs an API server to map kinds.
So this parses each YAML document (python3-yaml) and checks what a
validator would, for the kinds these manifests use, and what bucketcache
needs of them:

  * apiVersion/kind pairs, metadata.name, and the field names of every
    object level used (pod spec, containers, probes, env, volumes, ...):
    a misspelt field fails, as the API server's strict decoding would;
  * selectors match their pod template's labels (DaemonSet, Service, PDB);
  * each container: env names unique, $(VAR) references defined before,
    volumeMounts naming volumes, httpGet probe ports naming its ports;
  * the bucketcache container: liveness on /_bucketcache/health, readiness
    on /_bucketcache/ready; probes by exec (bucketcache --probe) when it
    listens on loopback (the kubelet's HTTP probes come from outside the
    pod); a memory limit (--mem-size auto reads it from the cgroup) at
    least its request; non-root, read-only root, no privilege escalation;
    the disk dir on a volume, an emptyDir's sizeLimit above --disk-size;
    a Redis URL only from a Secret; terminationGracePeriodSeconds above
    the drain's 25 s;
  * a container's AWS_ENDPOINT_URL names the gateway of its pod;
  * no credentials: AWS_* keys and secrets, tokens, passwords or client
    keys only by valueFrom (a Secret), never as literal values.

Prints one line per document; exits 1 on the first list of problems.
"""
import re
import sys

import yaml

API = {
    "ServiceAccount": "v1", "Service": "v1", "Pod": "v1", "Secret": "v1",
    "DaemonSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1",
    "PodDisruptionBudget": "policy/v1",
}

# Field names per object level (Kubernetes 1.29+ API reference).
FIELDS = {
    "object": {"apiVersion", "kind", "metadata", "spec"},
    "metadata": {"name", "namespace", "labels", "annotations"},
    "daemonset.spec": {"selector", "template", "updateStrategy",
                       "minReadySeconds", "revisionHistoryLimit"},
    "job.spec": {"template", "backoffLimit", "completions", "parallelism",
                 "activeDeadlineSeconds", "ttlSecondsAfterFinished",
                 "podFailurePolicy", "completionMode", "suspend",
                 "backoffLimitPerIndex", "maxFailedIndexes", "selector",
                 "manualSelector", "podReplacementPolicy"},
    "template": {"metadata", "spec"},
    "pod.spec": {"containers", "initContainers", "volumes", "restartPolicy",
                 "serviceAccountName", "terminationGracePeriodSeconds",
                 "securityContext", "nodeSelector", "affinity",
                 "tolerations", "priorityClassName", "hostNetwork",
                 "dnsPolicy", "imagePullSecrets",
                 "automountServiceAccountToken", "enableServiceLinks",
                 "shareProcessNamespace", "topologySpreadConstraints"},
    "container": {"name", "image", "command", "args", "workingDir", "ports",
                  "env", "envFrom", "resources", "volumeMounts",
                  "livenessProbe", "readinessProbe", "startupProbe",
                  "lifecycle", "securityContext", "imagePullPolicy",
                  "restartPolicy", "terminationMessagePath",
                  "terminationMessagePolicy", "resizePolicy", "stdin",
                  "stdinOnce", "tty", "volumeDevices"},
    "port": {"name", "containerPort", "hostPort", "hostIP", "protocol"},
    "env": {"name", "value", "valueFrom"},
    "valueFrom": {"secretKeyRef", "configMapKeyRef", "fieldRef",
                  "resourceFieldRef"},
    "keyRef": {"name", "key", "optional"},
    "probe": {"httpGet", "exec", "tcpSocket", "grpc", "initialDelaySeconds",
              "periodSeconds", "timeoutSeconds", "failureThreshold",
              "successThreshold", "terminationGracePeriodSeconds"},
    "httpGet": {"path", "port", "host", "scheme", "httpHeaders"},
    "exec": {"command"},
    "resources": {"requests", "limits", "claims"},
    "csc": {"runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
            "allowPrivilegeEscalation", "capabilities", "privileged",
            "seccompProfile", "seLinuxOptions", "procMount",
            "appArmorProfile"},
    "psc": {"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup",
            "fsGroupChangePolicy", "supplementalGroups", "seccompProfile",
            "seLinuxOptions", "sysctls", "appArmorProfile"},
    "capabilities": {"add", "drop"},
    "seccompProfile": {"type", "localhostProfile"},
    "volumeMount": {"name", "mountPath", "readOnly", "subPath",
                    "subPathExpr", "mountPropagation", "recursiveReadOnly"},
    "volume": {"name", "hostPath", "emptyDir", "persistentVolumeClaim",
               "secret", "configMap", "projected", "ephemeral"},
    "hostPath": {"path", "type"},
    "emptyDir": {"medium", "sizeLimit"},
    "updateStrategy": {"type", "rollingUpdate"},
    "rollingUpdate": {"maxUnavailable", "maxSurge"},
    "selector": {"matchLabels", "matchExpressions"},
    "service.spec": {"selector", "ports", "type", "internalTrafficPolicy",
                     "externalTrafficPolicy", "clusterIP", "sessionAffinity"},
    "service.port": {"name", "port", "targetPort", "protocol", "nodePort",
                     "appProtocol"},
    "pdb.spec": {"selector", "minAvailable", "maxUnavailable",
                 "unhealthyPodEvictionPolicy"},
}
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
SECRETISH = re.compile(r"(SECRET|TOKEN|PASSWORD|PASS|CLIENT_KEY|ACCESS_KEY)",
                       re.I)
DRAIN_TIMEOUT = 25
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
         "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def quantity(q):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i?)?", str(q))
    if m is None:
        raise ValueError("not a quantity: %r" % q)
    return float(m.group(1)) * UNITS.get(m.group(2) or "", 1)


def bc_size(s):
    """A bucketcache SIZE (K, M, G, T: powers of 1024)."""
    m = re.fullmatch(r"(\d+)([KMGT]?)", str(s))
    if m is None:
        raise ValueError("not a bucketcache SIZE: %r" % s)
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30,
                              "T": 2**40}[m.group(2)]


class Checker:
    def __init__(self, where):
        self.where = where
        self.problems = []

    def bad(self, path, msg):
        self.problems.append("%s: %s: %s" % (self.where, path, msg))

    def fields(self, obj, level, path):
        if not isinstance(obj, dict):
            self.bad(path, "not a mapping")
            return {}
        for k in obj:
            if k not in FIELDS[level]:
                self.bad(path, "unknown field %r" % k)
        return obj

    def labels_match(self, selector, labels, path):
        for k, v in (selector or {}).items():
            if labels.get(k) != v:
                self.bad(path, "selector %s=%s does not match the pod "
                         "template's labels %s" % (k, v, labels))

    # ---- objects -------------------------------------------------------
    def document(self, d):
        self.fields(d, "object", "")
        kind, api = d.get("kind"), d.get("apiVersion")
        if kind not in API:
            self.bad("kind", "unexpected kind %r" % kind)
            return None
        if api != API[kind]:
            self.bad("apiVersion", "%s is %s, not %r" % (kind, API[kind], api))
        md = self.fields(d.get("metadata"), "metadata", "metadata")
        if not md.get("name"):
            self.bad("metadata.name", "missing")
        for k, v in (md.get("labels") or {}).items():
            if not isinstance(v, str):
                self.bad("metadata.labels.%s" % k, "not a string")
        spec = d.get("spec")
        if kind == "DaemonSet":
            spec = self.fields(spec, "daemonset.spec", "spec")
            us = self.fields(spec.get("updateStrategy", {}), "updateStrategy",
                             "spec.updateStrategy")
            self.fields(us.get("rollingUpdate", {}), "rollingUpdate",
                        "spec.updateStrategy.rollingUpdate")
            self.workload(spec)
        elif kind == "Job":
            spec = self.fields(spec, "job.spec", "spec")
            self.workload(spec)
            rp = spec.get("template", {}).get("spec", {}).get("restartPolicy")
            if rp not in ("Never", "OnFailure"):
                self.bad("spec.template.spec.restartPolicy",
                         "a Job's pods need Never or OnFailure")
        elif kind == "Pod":
            self.pod(spec, "spec")
            self.pod_labels = md.get("labels") or {}
        elif kind == "Service":
            spec = self.fields(spec, "service.spec", "spec")
            for i, p in enumerate(spec.get("ports") or []):
                self.fields(p, "service.port", "spec.ports[%d]" % i)
                if not isinstance(p.get("port"), int):
                    self.bad("spec.ports[%d].port" % i, "not a number")
        elif kind == "PodDisruptionBudget":
            spec = self.fields(spec, "pdb.spec", "spec")
            self.fields(spec.get("selector"), "selector", "spec.selector")
            if ("minAvailable" in spec) == ("maxUnavailable" in spec):
                self.bad("spec", "exactly one of minAvailable, maxUnavailable")
        return kind

    def workload(self, spec):
        tpl = self.fields(spec.get("template"), "template", "spec.template")
        tmd = self.fields(tpl.get("metadata", {}), "metadata",
                          "spec.template.metadata")
        labels = tmd.get("labels") or {}
        if "selector" in spec:
            sel = self.fields(spec["selector"], "selector", "spec.selector")
            self.labels_match(sel.get("matchLabels"), labels, "spec.selector")
        self.pod(tpl.get("spec"), "spec.template.spec")
        self.pod_labels = labels

    def pod(self, ps, path):
        ps = self.fields(ps, "pod.spec", path)
        self.fields(ps.get("securityContext", {}), "psc",
                    path + ".securityContext")
        volumes = {}
        for i, v in enumerate(ps.get("volumes") or []):
            vp = "%s.volumes[%d]" % (path, i)
            self.fields(v, "volume", vp)
            volumes[v.get("name")] = v
            if "hostPath" in v:
                self.fields(v["hostPath"], "hostPath", vp + ".hostPath")
            if "emptyDir" in v:
                self.fields(v["emptyDir"] or {}, "emptyDir", vp + ".emptyDir")
        names = set()
        cs = [("initContainers", c) for c in ps.get("initContainers") or []]
        cs += [("containers", c) for c in ps.get("containers") or []]
        if not ps.get("containers"):
            self.bad(path, "no containers")
        for i, (group, c) in enumerate(cs):
            cp = "%s.%s[%s]" % (path, group, c.get("name", i))
            if c.get("name") in names:
                self.bad(cp, "container name used twice")
            names.add(c.get("name"))
            if group == "containers" and "restartPolicy" in c:
                self.bad(cp, "restartPolicy is for init containers (sidecars)")
            self.container(c, cp, volumes, ps)
        # the other containers' endpoint: the gateway in the pod, if any
        listen = getattr(self, "gw_listen", None)
        for group, c in cs:
            for e in c.get("env") or []:
                if e.get("name") != "AWS_ENDPOINT_URL" or listen is None:
                    continue
                m = re.fullmatch(r"http://(127\.0\.0\.1|localhost|\[::1\])"
                                 r":(\d+)/?", str(e.get("value", "")))
                if m is None or int(m.group(2)) != int(
                        listen.rsplit(":", 1)[1]):
                    self.bad("%s.%s[%s]" % (path, group, c.get("name")),
                             "AWS_ENDPOINT_URL %s is not the gateway in the "
                             "pod (%s)" % (e.get("value"), listen))

    def container(self, c, path, volumes, ps):
        self.fields(c, "container", path)
        if not c.get("name") or not c.get("image"):
            self.bad(path, "name and image are required")
        ports = {}
        for i, p in enumerate(c.get("ports") or []):
            self.fields(p, "port", "%s.ports[%d]" % (path, i))
            ports[p.get("name")] = p
            ports[p.get("containerPort")] = p
        env = {}
        for i, e in enumerate(c.get("env") or []):
            ep = "%s.env[%s]" % (path, e.get("name", i))
            self.fields(e, "env", ep)
            n = e.get("name", "")
            if not ENV_NAME.match(n):
                self.bad(ep, "not an environment variable name")
            if n in env:
                self.bad(ep, "set twice")
            if "value" in e and "valueFrom" in e:
                self.bad(ep, "value and valueFrom")
            if "value" in e:
                if not isinstance(e["value"], str):
                    self.bad(ep, "value must be a string (quote it)")
                for ref in re.findall(r"\$\(([^)]*)\)", str(e["value"])):
                    if ref not in env:
                        self.bad(ep, "$(%s) is not defined before it" % ref)
                secretish = (SECRETISH.search(n) and
                             not re.fullmatch(r"\$\([^)]*\)(:\$\([^)]*\))*",
                                              str(e["value"])))
                if n.startswith("AWS_") and n not in (
                        "AWS_REGION", "AWS_DEFAULT_REGION",
                        "AWS_ENDPOINT_URL", "AWS_ROLE_ARN",
                        "AWS_WEB_IDENTITY_TOKEN_FILE",
                        "AWS_STS_REGIONAL_ENDPOINTS"):
                    secretish = True
                if secretish:
                    self.bad(ep, "a credential as a literal value: use a "
                             "Secret (valueFrom.secretKeyRef)")
                if re.search(r"://[^/@\s]*:[^/@\s]*@", str(e["value"])):
                    self.bad(ep, "a password in a URL: use a Secret")
            if "valueFrom" in e:
                vf = self.fields(e["valueFrom"], "valueFrom", ep + ".valueFrom")
                for k in ("secretKeyRef", "configMapKeyRef"):
                    if k in vf:
                        r = self.fields(vf[k], "keyRef", ep + ".valueFrom." + k)
                        if not r.get("name") or not r.get("key"):
                            self.bad(ep, k + " needs name and key")
            env[n] = e
        for i, m in enumerate(c.get("volumeMounts") or []):
            self.fields(m, "volumeMount", "%s.volumeMounts[%d]" % (path, i))
            if m.get("name") not in volumes:
                self.bad(path, "volumeMount %r names no volume" % m.get("name"))
        res = self.fields(c.get("resources", {}), "resources",
                          path + ".resources")
        sc = self.fields(c.get("securityContext", {}), "csc",
                         path + ".securityContext")
        self.fields(sc.get("capabilities", {}), "capabilities",
                    path + ".securityContext.capabilities")
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            if kind in c:
                pr = self.fields(c[kind], "probe", path + "." + kind)
                if "httpGet" in pr:
                    hg = self.fields(pr["httpGet"], "httpGet",
                                     path + "." + kind + ".httpGet")
                    if hg.get("port") not in ports:
                        self.bad(path + "." + kind, "port %r is none of the "
                                 "container's ports" % hg.get("port"))
                if "exec" in pr:
                    self.fields(pr["exec"], "exec", path + "." + kind + ".exec")
        if c.get("image", "").split(":")[0].split("/")[-1] == "bucketcache" \
                and c.get("name") == "bucketcache":
            self.gateway(c, path, env, ports, res, sc, volumes, ps)

    # ---- what bucketcache needs ----------------------------------------
    def gateway(self, c, path, env, ports, res, sc, volumes, ps):
        self.gateways += 1
        args = c.get("args") or []

        def opt(name):
            flag = "--" + name
            for i, a in enumerate(args):
                if a == flag and i + 1 < len(args):
                    return args[i + 1]
                if a.startswith(flag + "="):
                    return a[len(flag) + 1:]
            e = env.get("BUCKETCACHE_" + name.upper().replace("-", "_"))
            if e is None:
                return None
            return e.get("value", "<secret>")

        listen = opt("listen") or "0.0.0.0:8080"   # the image's default
        loopback = listen.startswith("127.") or listen.startswith("[::1]")
        self.gw_listen = listen
        port = int(listen.rsplit(":", 1)[1])
        want = {"livenessProbe": "health", "readinessProbe": "ready",
                "startupProbe": "health"}
        for kind in ("livenessProbe", "readinessProbe"):
            if kind not in c:
                self.bad(path, "no " + kind)
        for kind, name in want.items():
            pr = c.get(kind)
            if pr is None:
                continue
            if "httpGet" in pr:
                if loopback:
                    self.bad(path + "." + kind, "an httpGet probe cannot "
                             "reach a gateway listening on " + listen +
                             " (use exec: bucketcache --probe)")
                if pr["httpGet"].get("path") != "/_bucketcache/" + name:
                    self.bad(path + "." + kind, "should ask /_bucketcache/" +
                             name)
                p = ports.get(pr["httpGet"].get("port"), {})
                if p.get("containerPort") != port:
                    self.bad(path + "." + kind, "probes port %s, the gateway "
                             "listens on %s" % (p.get("containerPort"), listen))
            elif "exec" in pr:
                cmd = pr["exec"].get("command") or []
                ok = (cmd[:1] in (["bucketcache"], ["/usr/bin/bucketcache"])
                      and ("--probe" if name == "health" else
                           "--probe=" + name) in cmd)
                if not ok:
                    self.bad(path + "." + kind, "should run bucketcache "
                             "--probe%s" % ("" if name == "health" else
                                            "=" + name))
            else:
                self.bad(path + "." + kind, "httpGet or exec expected")
        for p in ports.values():
            if isinstance(p, dict) and p.get("containerPort") != port:
                self.bad(path + ".ports", "containerPort %s but the gateway "
                         "listens on %s" % (p.get("containerPort"), listen))
        lim = (res.get("limits") or {}).get("memory")
        req = (res.get("requests") or {}).get("memory")
        if lim is None:
            self.bad(path + ".resources", "no memory limit (--mem-size auto "
                     "sizes itself from it)")
        elif req is not None and quantity(req) > quantity(lim):
            self.bad(path + ".resources", "memory request above the limit")
        mem = opt("mem-size")
        if lim is not None and mem not in (None, "auto"):
            if bc_size(mem) > quantity(lim) * 2 / 3:
                self.bad(path, "--mem-size %s leaves too little of the %s "
                         "limit (use auto)" % (mem, lim))
        psc = ps.get("securityContext") or {}
        if not (sc.get("runAsNonRoot", psc.get("runAsNonRoot"))):
            self.bad(path + ".securityContext", "runAsNonRoot is not set")
        if sc.get("readOnlyRootFilesystem") is not True:
            self.bad(path + ".securityContext", "readOnlyRootFilesystem")
        if sc.get("allowPrivilegeEscalation") is not False:
            self.bad(path + ".securityContext", "allowPrivilegeEscalation")
        ddir = opt("disk-dir")
        if ddir:
            mounts = {m.get("mountPath"): m for m in
                      c.get("volumeMounts") or []}
            m = mounts.get(ddir)
            if m is None:
                self.bad(path, "the disk dir %s is on no volume (the root "
                         "is read-only)" % ddir)
            elif m.get("readOnly"):
                self.bad(path, "the disk dir's volume is read-only")
            size = opt("disk-size")
            if size is None:
                self.bad(path, "--disk-dir without --disk-size")
            elif m is not None:
                ed = (volumes.get(m.get("name")) or {}).get("emptyDir")
                if ed and ed.get("sizeLimit") and \
                        bc_size(size) >= quantity(ed["sizeLimit"]):
                    self.bad(path, "--disk-size %s is not below the "
                             "emptyDir's sizeLimit %s (eviction)" %
                             (size, ed["sizeLimit"]))
        redis = env.get("BUCKETCACHE_REDIS")
        if redis is not None and "secretKeyRef" not in \
                (redis.get("valueFrom") or {}):
            self.bad(path, "the Redis URL (it may hold a password) should "
                     "come from a Secret")
        if (redis is not None or "--redis" in args) and \
                opt("redis-size") is None:
            self.bad(path, "--redis without --redis-size")
        tgp = ps.get("terminationGracePeriodSeconds", 30)
        if tgp <= DRAIN_TIMEOUT:
            self.bad(path, "terminationGracePeriodSeconds %s leaves the "
                     "%d s drain no time" % (tgp, DRAIN_TIMEOUT))


def main(files):
    problems = []
    for f in files:
        with open(f) as fp:
            docs = [d for d in yaml.safe_load_all(fp) if d is not None]
        pods = {}
        selectors = []
        gateways = 0
        for i, d in enumerate(docs):
            ck = Checker("%s#%d" % (f, i + 1))
            ck.gateways = 0
            ck.pod_labels = None
            kind = ck.document(d)
            gateways += ck.gateways
            if ck.pod_labels is not None:
                pods[d["metadata"]["name"]] = ck.pod_labels
            if kind in ("Service", "PodDisruptionBudget"):
                sel = d.get("spec", {}).get("selector", {})
                sel = sel.get("matchLabels", sel) if kind != "Service" else sel
                selectors.append((ck.where, sel))
            problems += ck.problems
            print("  %s#%d %s %s: %s" % (f, i + 1, kind,
                  (d.get("metadata") or {}).get("name"),
                  "ok" if not ck.problems else "%d problem(s)" %
                  len(ck.problems)))
        for where, sel in selectors:
            if not any(all(l.get(k) == v for k, v in sel.items())
                       for l in pods.values()):
                problems.append("%s: selector %s matches no pod template of "
                                "%s" % (where, sel, f))
        if gateways == 0:
            problems.append("%s: no bucketcache container" % f)
    for p in problems:
        print("PROBLEM: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
