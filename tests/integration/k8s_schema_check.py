#!/usr/bin/env python3
# Copyright 2026 The kbisect Authors.
"""An offline schema check of kbisect's Kubernetes and Kueue manifests.

`kubectl create --dry-run=client` and `kubectl apply --validate` need an API server (they fetch
its OpenAPI schema), and Debian packages no offline validator (kubeconform, kubeval). So this
checks, explicitly, what the API server would refuse in the kinds kbisect's Kueue deployment
uses, as their schemas define them:

  batch/v1 Job (the fields of Kubernetes 1.28, where batch/v1 has no beta-gated field beyond
  podFailurePolicy: backoffLimitPerIndex, maxFailedIndexes and podReplacementPolicy were alpha
  then and are refused here), its pod template's containers, env, resources, volumes;
  kueue.x-k8s.io/v1beta1 ResourceFlavor, ClusterQueue, LocalQueue and WorkloadPriorityClass.

Checked: required fields, unknown fields (strict decoding), enums, types, DNS-1123 names, label
keys and values, resource quantities, the podFailurePolicy's rules, Kueue's rule that every flavor
of a resource group lists the group's covered resources in order. Other kinds pass unchecked but
for apiVersion, kind and metadata.name.

Reads YAML documents from stdin; prints them as one JSON array on stdout when all are valid,
else each problem on stderr and exits 1.
"""

import json
import re
import sys

import yaml

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?[0-9]+))?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

JOB_SPEC = {"activeDeadlineSeconds", "backoffLimit", "completionMode", "completions",
            "manualSelector", "parallelism", "podFailurePolicy", "selector", "suspend",
            "template", "ttlSecondsAfterFinished"}
POD_SPEC = {"activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "containers",
            "dnsConfig", "dnsPolicy", "enableServiceLinks", "hostIPC", "hostNetwork", "hostPID",
            "hostname", "imagePullSecrets", "initContainers", "nodeName", "nodeSelector",
            "priorityClassName", "restartPolicy", "runtimeClassName", "schedulerName",
            "securityContext", "serviceAccountName", "subdomain", "terminationGracePeriodSeconds",
            "tolerations", "topologySpreadConstraints", "volumes"}
CONTAINER = {"args", "command", "env", "envFrom", "image", "imagePullPolicy", "lifecycle",
             "livenessProbe", "name", "ports", "readinessProbe", "resources", "securityContext",
             "startupProbe", "volumeMounts", "workingDir"}
TOLERATION = {"key", "operator", "value", "effect", "tolerationSeconds"}


class Checker:
    """Collects the problems of one document, each prefixed with where it is."""

    def __init__(self, name):
        self.name = name
        self.problems = []

    def fail(self, path, message):
        self.problems.append(f"{self.name}: {path}: {message}")

    def mapping(self, value, path, allowed=None, required=()):
        if not isinstance(value, dict):
            self.fail(path, f"must be a mapping, not {type(value).__name__}")
            return {}
        for key in required:
            if key not in value:
                self.fail(path, f"lacks the required field {key}")
        if allowed is not None:
            for key in value:
                if key not in allowed and key not in required:
                    self.fail(path, f"unknown field {key}")
        return value

    def integer(self, value, path, minimum=None, maximum=None):
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"must be an integer, not {value!r}")
        elif (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            self.fail(path, f"{value} is outside {minimum}..{maximum}")

    def string(self, value, path, pattern=None, enum=None, max_length=None):
        if not isinstance(value, str):
            self.fail(path, f"must be a string, not {value!r}")
        elif enum is not None and value not in enum:
            self.fail(path, f"{value!r} is not one of {', '.join(sorted(enum))}")
        elif pattern is not None and not pattern.match(value):
            self.fail(path, f"{value!r} does not match {pattern.pattern}")
        elif max_length is not None and len(value) > max_length:
            self.fail(path, f"{value!r} is longer than {max_length}")

    def quantity(self, value, path):
        if isinstance(value, bool) or not isinstance(value, (int, str)) or \
                not QUANTITY.match(str(value)):
            self.fail(path, f"{value!r} is not a resource quantity")

    def labels(self, value, path, values_too=True):
        for key, item in self.mapping(value, path).items():
            prefix, _, name = key.rpartition("/")
            if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or \
                    len(name) > 63 or not LABEL_NAME.match(name):
                self.fail(f"{path}.{key}", "is not a valid label or annotation key")
            if not isinstance(item, str):
                self.fail(f"{path}.{key}", f"must be a string, not {item!r}")
            elif values_too and item and (len(item) > 63 or not LABEL_NAME.match(item)):
                self.fail(f"{path}.{key}", f"{item!r} is not a valid label value")

    def metadata(self, doc, namespaced, name_pattern=DNS_SUBDOMAIN, max_name=253):
        meta = self.mapping(doc.get("metadata"), "metadata", required=("name",))
        self.string(meta.get("name"), "metadata.name", name_pattern, max_length=max_name)
        if namespaced is True and "namespace" not in meta:
            self.fail("metadata", "lacks the namespace of a namespaced object")
        if namespaced is False and "namespace" in meta:
            self.fail("metadata.namespace", "is set on a cluster-scoped object")
        if "namespace" in meta:
            self.string(meta["namespace"], "metadata.namespace", DNS_LABEL, max_length=63)
        if "labels" in meta:
            self.labels(meta["labels"], "metadata.labels")
        if "annotations" in meta:
            self.labels(meta["annotations"], "metadata.annotations", values_too=False)
        return meta

    def tolerations(self, value, path):
        for i, toleration in enumerate(value if isinstance(value, list) else []):
            t = self.mapping(toleration, f"{path}[{i}]", TOLERATION)
            if "operator" in t:
                self.string(t["operator"], f"{path}[{i}].operator", enum={"Exists", "Equal"})
            if "effect" in t:
                self.string(t["effect"], f"{path}[{i}].effect",
                            enum={"NoSchedule", "PreferNoSchedule", "NoExecute"})
            if t.get("operator") == "Exists" and t.get("value"):
                self.fail(f"{path}[{i}].value", "must be empty with operator Exists")


def check_container(c, container, path, volumes):
    container = c.mapping(container, path, CONTAINER, required=("name", "image"))
    c.string(container.get("name"), f"{path}.name", DNS_LABEL, max_length=63)
    c.string(container.get("image"), f"{path}.image")
    for i, env in enumerate(container.get("env", [])):
        env = c.mapping(env, f"{path}.env[{i}]", {"value", "valueFrom"}, required=("name",))
        c.string(env.get("name"), f"{path}.env[{i}].name", ENV_NAME)
        if "value" in env:
            c.string(env["value"], f"{path}.env[{i}].value")
            if "valueFrom" in env:
                c.fail(f"{path}.env[{i}]", "has both value and valueFrom")
    resources = c.mapping(container.get("resources", {}), f"{path}.resources",
                          {"limits", "requests"})
    for part in ("limits", "requests"):
        for name, amount in c.mapping(resources.get(part, {}), f"{path}.resources.{part}").items():
            c.quantity(amount, f"{path}.resources.{part}.{name}")
    for i, mount in enumerate(container.get("volumeMounts", [])):
        mount = c.mapping(mount, f"{path}.volumeMounts[{i}]",
                          {"readOnly", "subPath", "mountPropagation"},
                          required=("name", "mountPath"))
        if mount.get("name") not in volumes:
            c.fail(f"{path}.volumeMounts[{i}].name", f"{mount.get('name')!r} names no volume")


def check_pod_failure_policy(c, policy, containers, restart_policy):
    if restart_policy != "Never":
        c.fail("spec.podFailurePolicy", "needs the pod template's restartPolicy: Never")
    policy = c.mapping(policy, "spec.podFailurePolicy", required=("rules",))
    for i, rule in enumerate(policy.get("rules", [])):
        path = f"spec.podFailurePolicy.rules[{i}]"
        rule = c.mapping(rule, path, {"onExitCodes", "onPodConditions"}, required=("action",))
        c.string(rule.get("action"), f"{path}.action", enum={"FailJob", "Ignore", "Count"})
        if ("onExitCodes" in rule) == ("onPodConditions" in rule):
            c.fail(path, "needs exactly one of onExitCodes and onPodConditions")
        if "onExitCodes" in rule:
            codes = c.mapping(rule["onExitCodes"], f"{path}.onExitCodes", {"containerName"},
                              required=("operator", "values"))
            c.string(codes.get("operator"), f"{path}.onExitCodes.operator", enum={"In", "NotIn"})
            values = codes.get("values", [])
            if not isinstance(values, list) or not 1 <= len(values) <= 255:
                c.fail(f"{path}.onExitCodes.values", "must list 1 to 255 exit codes")
            elif codes.get("operator") == "In" and 0 in values:
                c.fail(f"{path}.onExitCodes.values", "must not hold 0 with operator In")
            if "containerName" in codes and codes["containerName"] not in containers:
                c.fail(f"{path}.onExitCodes.containerName", "names no container")
        for j, condition in enumerate(rule.get("onPodConditions", [])):
            condition = c.mapping(condition, f"{path}.onPodConditions[{j}]", {"status"},
                                  required=("type",))
            if "status" in condition:
                c.string(condition["status"], f"{path}.onPodConditions[{j}].status",
                         enum={"True", "False", "Unknown"})


def check_job(c, doc):
    c.metadata(doc, namespaced=None, name_pattern=DNS_LABEL, max_name=63)
    spec = c.mapping(doc.get("spec"), "spec", JOB_SPEC, required=("template",))
    for field in ("completions", "parallelism", "backoffLimit", "ttlSecondsAfterFinished"):
        if field in spec:
            c.integer(spec[field], f"spec.{field}", minimum=0)
    if "completionMode" in spec:
        c.string(spec["completionMode"], "spec.completionMode", enum={"NonIndexed", "Indexed"})
    if spec.get("completionMode") == "Indexed" and "completions" not in spec:
        c.fail("spec.completions", "is required with completionMode: Indexed")
    if "suspend" in spec and not isinstance(spec["suspend"], bool):
        c.fail("spec.suspend", "must be a boolean")
    template = c.mapping(spec.get("template", {}), "spec.template", {"metadata", "spec"},
                         required=("spec",))
    if "metadata" in template and "labels" in template["metadata"]:
        c.labels(template["metadata"]["labels"], "spec.template.metadata.labels")
    pod = c.mapping(template.get("spec", {}), "spec.template.spec", POD_SPEC,
                    required=("containers",))
    c.string(pod.get("restartPolicy"), "spec.template.spec.restartPolicy",
             enum={"Never", "OnFailure"})
    if "nodeSelector" in pod:
        c.labels(pod["nodeSelector"], "spec.template.spec.nodeSelector")
    if "tolerations" in pod:
        c.tolerations(pod["tolerations"], "spec.template.spec.tolerations")
    volumes = set()
    for i, volume in enumerate(pod.get("volumes", [])):
        volume = c.mapping(volume, f"spec.template.spec.volumes[{i}]", required=("name",))
        c.string(volume.get("name"), f"spec.template.spec.volumes[{i}].name", DNS_LABEL)
        if len(volume) != 2:
            c.fail(f"spec.template.spec.volumes[{i}]", "needs exactly one volume source")
        volumes.add(volume.get("name"))
    containers = pod.get("containers", [])
    if not isinstance(containers, list) or not containers:
        c.fail("spec.template.spec.containers", "must list at least one container")
        containers = []
    for i, container in enumerate(containers):
        check_container(c, container, f"spec.template.spec.containers[{i}]", volumes)
    if "podFailurePolicy" in spec:
        names = {container.get("name") for container in containers if isinstance(container, dict)}
        check_pod_failure_policy(c, spec["podFailurePolicy"], names, pod.get("restartPolicy"))


def check_resource_flavor(c, doc):
    c.metadata(doc, namespaced=False)
    spec = c.mapping(doc.get("spec", {}), "spec",
                     {"nodeLabels", "nodeTaints", "tolerations", "topologyName"})
    if "nodeLabels" in spec:
        c.labels(spec["nodeLabels"], "spec.nodeLabels")
    if "tolerations" in spec:
        c.tolerations(spec["tolerations"], "spec.tolerations")


def check_cluster_queue(c, doc):
    c.metadata(doc, namespaced=False)
    spec = c.mapping(doc.get("spec", {}), "spec",
                     {"resourceGroups", "cohort", "queueingStrategy", "namespaceSelector",
                      "flavorFungibility", "preemption", "admissionChecks",
                      "admissionChecksStrategy", "stopPolicy", "fairSharing"})
    if "queueingStrategy" in spec:
        c.string(spec["queueingStrategy"], "spec.queueingStrategy",
                 enum={"StrictFIFO", "BestEffortFIFO"})
    if "stopPolicy" in spec:
        c.string(spec["stopPolicy"], "spec.stopPolicy", enum={"None", "Hold", "HoldAndDrain"})
    preemption = c.mapping(spec.get("preemption", {}), "spec.preemption",
                           {"reclaimWithinCohort", "withinClusterQueue", "borrowWithinCohort"})
    if "withinClusterQueue" in preemption:
        c.string(preemption["withinClusterQueue"], "spec.preemption.withinClusterQueue",
                 enum={"Never", "LowerPriority", "LowerOrNewerEqualPriority"})
    if "reclaimWithinCohort" in preemption:
        c.string(preemption["reclaimWithinCohort"], "spec.preemption.reclaimWithinCohort",
                 enum={"Never", "LowerPriority", "Any"})
    for i, group in enumerate(spec.get("resourceGroups", [])):
        path = f"spec.resourceGroups[{i}]"
        group = c.mapping(group, path, required=("coveredResources", "flavors"))
        covered = group.get("coveredResources", [])
        if not isinstance(covered, list) or not 1 <= len(covered) <= 16:
            c.fail(f"{path}.coveredResources", "must list 1 to 16 resources")
        flavors = group.get("flavors", [])
        if not isinstance(flavors, list) or not 1 <= len(flavors) <= 16:
            c.fail(f"{path}.flavors", "must list 1 to 16 flavors")
            flavors = []
        for j, flavor in enumerate(flavors):
            flavor = c.mapping(flavor, f"{path}.flavors[{j}]", required=("name", "resources"))
            c.string(flavor.get("name"), f"{path}.flavors[{j}].name", DNS_SUBDOMAIN)
            resources = flavor.get("resources", [])
            names = [r.get("name") for r in resources if isinstance(r, dict)]
            if names != covered:
                c.fail(f"{path}.flavors[{j}].resources",
                       f"must list the covered resources {covered} in order, not {names}")
            for k, resource in enumerate(resources):
                resource = c.mapping(resource, f"{path}.flavors[{j}].resources[{k}]",
                                     {"borrowingLimit", "lendingLimit"},
                                     required=("name", "nominalQuota"))
                c.quantity(resource.get("nominalQuota"),
                           f"{path}.flavors[{j}].resources[{k}].nominalQuota")


def check_local_queue(c, doc):
    c.metadata(doc, namespaced=True)
    spec = c.mapping(doc.get("spec", {}), "spec", {"stopPolicy", "fairSharing"},
                     required=("clusterQueue",))
    c.string(spec.get("clusterQueue"), "spec.clusterQueue", DNS_SUBDOMAIN)


def check_workload_priority_class(c, doc):
    c.metadata(doc, namespaced=False)
    for key in doc:
        if key not in {"apiVersion", "kind", "metadata", "value", "description"}:
            c.fail(key, "unknown field")
    if "value" not in doc:
        c.fail("value", "is required")
    else:
        c.integer(doc["value"], "value", -2**31, 2**31 - 1)
    if "description" in doc:
        c.string(doc["description"], "description")


CHECKS = {
    ("batch/v1", "Job"): check_job,
    ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"): check_resource_flavor,
    ("kueue.x-k8s.io/v1beta1", "ClusterQueue"): check_cluster_queue,
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): check_local_queue,
    ("kueue.x-k8s.io/v1beta1", "WorkloadPriorityClass"): check_workload_priority_class,
}


def main():
    documents = [doc for doc in yaml.safe_load_all(sys.stdin) if doc is not None]
    problems = []
    for index, doc in enumerate(documents):
        if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
            problems.append(f"document {index}: lacks apiVersion or kind")
            continue
        name = (doc.get("metadata") or {}).get("name", f"document {index}")
        checker = Checker(f"{doc['kind']}/{name}")
        check = CHECKS.get((doc["apiVersion"], doc["kind"]))
        if check is not None:
            check(checker, doc)
        elif doc["apiVersion"].startswith("kueue.x-k8s.io/"):
            checker.fail("apiVersion", f"{doc['apiVersion']} {doc['kind']} is not checked here")
        else:
            checker.metadata(doc, namespaced=None)
        problems.extend(checker.problems)
    if not documents:
        problems.append("no documents")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    json.dump(documents, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
