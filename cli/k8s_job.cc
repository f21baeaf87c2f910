// Copyright 2026 The kbisect Authors.
#include "cli/k8s_job.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

// A Job name's bound: an Indexed Job's pods are named NAME-INDEX-xxxxx and their host names
// NAME-INDEX, which must stay within a DNS label's 63 characters; 52 is also CronJob's bound.
constexpr size_t kMaxJobName = 52;
// A name cut to make room for "-" and 6 hex digits of the id's hash.
constexpr size_t kCutJobName = kMaxJobName - 7;

// `text` as a YAML double-quoted scalar (JSON's string syntax is one).
std::string Quote(const std::string& text) { return nlohmann::json(text).dump(); }

// The FNV-1a hash of `text`: stable across builds and machines, unlike std::hash.
uint32_t Fnv1a(const std::string& text) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

// Whether `name` is a DNS-1123 label: [a-z0-9] and '-', starting and ending with [a-z0-9].
bool IsDnsLabel(const std::string& name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  for (char c : name) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return true;
}

const K8sHardwareClass* FindClass(const std::string& name) {
  for (const K8sHardwareClass& c : K8sHardwareClasses()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The names of the known hardware classes, for an error message.
std::string ClassNames() {
  std::string names;
  for (const K8sHardwareClass& c : K8sHardwareClasses()) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", c.name);
  }
  return names;
}

// InvalidArgument naming the first option of `o` that is wrong, else OK.
absl::Status CheckOptions(const K8sJobOptions& o) {
  if (o.job_id.empty()) return absl::InvalidArgumentError("--job-id is required");
  if (o.workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--workers ", o.workers, ": at least 1"));
  }
  if (o.min_workers < 1 || o.min_workers > o.workers) {
    return absl::InvalidArgumentError(absl::StrCat("--min-workers ", o.min_workers,
                                                   ": between 1 and --workers (", o.workers, ")"));
  }
  if (o.priority != "nightly" && o.priority != "interactive") {
    return absl::InvalidArgumentError(
        absl::StrCat("--priority '", o.priority, "': nightly or interactive"));
  }
  if (FindClass(o.hardware_class) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--hardware-class '", o.hardware_class,
                                                   "': one of ", ClassNames(), " (deploy/k8s)"));
  }
  if (!IsDnsLabel(o.queue)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--queue '", o.queue, "': a LocalQueue's name (a DNS-1123 label)"));
  }
  if (o.coordinator.empty()) return absl::InvalidArgumentError("--coordinator is empty");
  if (!o.name.empty() && (!IsDnsLabel(o.name) || o.name.size() > kMaxJobName)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--name '", o.name,
                     "': a DNS-1123 label ([a-z0-9-], starting and ending with a letter "
                     "or digit) of at most ",
                     kMaxJobName, " characters"));
  }
  if (!IsDnsLabel(o.k8s_namespace)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--namespace '", o.k8s_namespace, "': a DNS-1123 label"));
  }
  return absl::OkStatus();
}

// The Job, with $KEYs that K8sJobManifest replaces by their (quoted) values. The pod follows the
// base's worker StatefulSet (deploy/k8s/base/worker-statefulset.yaml): its environment, TLS
// secret and compiler cache, with a cache volume of its own for this bisect only.
constexpr char kJobTemplate[] =
    R"(# The workers of bisect $JOB_ID ($WORKERS x $CLASS), queued by Kueue: `kbisect k8s-job`,
# docs/operations.md "Kueue". Each pod serves until the bisect has ended, then exits 0.
apiVersion: batch/v1
kind: Job
metadata:
  name: $NAME
  namespace: $NAMESPACE
  labels:
    app.kubernetes.io/name: kbisect-worker
    app.kubernetes.io/part-of: kbisect
    kbisect.dev/hardware-class: $CLASS
    kueue.x-k8s.io/queue-name: $QUEUE
    kueue.x-k8s.io/priority-class: $PRIORITY_CLASS
  annotations:
    kbisect.dev/job-id: $JOB_ID
    kueue.x-k8s.io/job-min-parallelism: $MIN_WORKERS
    kueue.x-k8s.io/job-completions-equal-parallelism: "true"
spec:
  completionMode: Indexed
  completions: $WORKERS
  parallelism: $WORKERS
  # Kueue unsuspends the Job when it admits it (with at least job-min-parallelism pods).
  suspend: true
  # A pod that failed is replaced, up to W times in all; exit 2 (a job the coordinator does not
  # know, a bad flag) fails the Job at once; a pod evicted by a preemption or a drain counts
  # nothing.
  backoffLimit: $WORKERS
  podFailurePolicy:
    rules:
      - action: FailJob
        onExitCodes:
          containerName: worker
          operator: In
          values: [2]
      - action: Ignore
        onPodConditions:
          - type: DisruptionTarget
            status: "True"
  ttlSecondsAfterFinished: 86400
  template:
    metadata:
      labels:
        app.kubernetes.io/name: kbisect-worker
        app.kubernetes.io/part-of: kbisect
        kbisect.dev/hardware-class: $CLASS
    spec:
      restartPolicy: Never
      # SIGTERM drains: the running probe finishes and is reported. Give it time to.
      terminationGracePeriodSeconds: 900
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        fsGroup: 10001
      # The class's ResourceFlavor's node label: keeps Kueue to that flavor.
      nodeSelector:
        $NODE_LABEL_KEY: $NODE_LABEL_VALUE
      containers:
        - name: worker
          image: $IMAGE
          command: ["kbisect-worker"]
          envFrom:
            - configMapRef:
                name: kbisect-config
          env:
            - name: KBISECT_GPU
              value: "0"
            - name: KBISECT_WORKER_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: KBISECT_COORDINATOR
              value: $COORDINATOR
            - name: KBISECT_UNTIL_JOB
              value: $JOB_ID
            - name: KBISECT_TLS_CERT
              value: /etc/kbisect/tls/tls.crt
            - name: KBISECT_TLS_KEY
              value: /etc/kbisect/tls/tls.key
            - name: KBISECT_COMPILER_CACHE_PASSWORD
              valueFrom:
                secretKeyRef:
                  name: kbisect-compiler-cache
                  key: password
                  optional: true
            - name: KBISECT_COMPILER_CACHE_REMOTE
              value: $COMPILER_CACHE_REMOTE
            # The coordinator's ConfigMap settings that do not apply to workers.
            - name: KBISECT_TOKEN_FILE
              value: ""
          resources:
            limits:
              $GPU_RESOURCE: 1
            requests:
              cpu: "8"
              memory: 32Gi
          volumeMounts:
            - name: cache
              mountPath: /var/cache/kbisect
            - name: tls
              mountPath: /etc/kbisect/tls
              readOnly: true
      volumes:
        # Mirrors, checkouts and builds for this bisect only; the compiler cache is shared.
        - name: cache
          emptyDir: {}
        - name: tls
          secret:
            secretName: kbisect-worker-tls
)";

}  // namespace

const std::vector<K8sHardwareClass>& K8sHardwareClasses() {
  static const std::vector<K8sHardwareClass>* const kClasses = new std::vector<K8sHardwareClass>{
      {"h100", "nvidia.com/gpu", "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3", ""},
      {"b200", "nvidia.com/gpu", "nvidia.com/gpu.product", "NVIDIA-B200", ""},
      {"mi300x", "amd.com/gpu", "amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM", "-rocm"},
  };
  return *kClasses;
}

std::string K8sJobName(const std::string& job_id) {
  std::string cleaned;
  for (char c : job_id) {
    c = absl::ascii_tolower(c);
    if (absl::ascii_islower(c) || absl::ascii_isdigit(c)) {
      cleaned.push_back(c);
    } else if (!cleaned.empty() && cleaned.back() != '-') {
      cleaned.push_back('-');
    }
  }
  absl::string_view trimmed = absl::StripSuffix(cleaned, "-");
  std::string name = absl::StrCat("kbisect-", trimmed);
  if (trimmed == job_id && name.size() <= kMaxJobName) return name;
  name.resize(std::min(name.size(), kCutJobName));
  while (name.back() == '-') name.pop_back();
  return absl::StrFormat("%s-%06x", name, Fnv1a(job_id) & 0xffffff);
}

absl::StatusOr<std::string> K8sJobManifest(const K8sJobOptions& options) {
  if (absl::Status valid = CheckOptions(options); !valid.ok()) return valid;
  const K8sHardwareClass& hardware = *FindClass(options.hardware_class);
  const std::string workers = absl::StrCat(options.workers);
  return absl::StrReplaceAll(
      kJobTemplate,
      {{"$JOB_ID", Quote(options.job_id)},
       {"$WORKERS", workers},
       {"$MIN_WORKERS", Quote(absl::StrCat(options.min_workers))},
       {"$CLASS", Quote(options.hardware_class)},
       {"$NAME", Quote(options.name.empty() ? K8sJobName(options.job_id) : options.name)},
       {"$NAMESPACE", Quote(options.k8s_namespace)},
       {"$QUEUE", Quote(options.queue)},
       {"$PRIORITY_CLASS", Quote(absl::StrCat("kbisect-", options.priority))},
       {"$NODE_LABEL_KEY", hardware.node_label_key},
       {"$NODE_LABEL_VALUE", Quote(hardware.node_label_value)},
       {"$IMAGE",
        Quote(options.image.empty() ? absl::StrCat(kDefaultK8sImage, hardware.image_tag_suffix)
                                    : options.image)},
       {"$COORDINATOR", Quote(options.coordinator)},
       {"$COMPILER_CACHE_REMOTE",
        Quote(absl::StrCat("redis://:$(KBISECT_COMPILER_CACHE_PASSWORD)@kbisect-compiler-cache.",
                           options.k8s_namespace, ".svc:6379"))},
       {"$GPU_RESOURCE", hardware.gpu_resource}});
}

}  // namespace kbisect
