package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// readJob decodes a manifest under deploy/ strictly into the official
// batch/v1 Job: a misspelt or misplaced field (which kubectl apply would
// drop or refuse) fails the test.
func readJob(t *testing.T, name string) *batchv1.Job {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatalf("deploy/%s does not decode strictly into a batch/v1 Job: %v", name, err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("deploy/%s: apiVersion %q, kind %q: want batch/v1 Job", name, job.APIVersion, job.Kind)
	}
	return &job
}

// TestManifestDecodesStrictly: the strict decoding refuses an unknown
// field, so the tests below would see a typo.
func TestManifestDecodesStrictly(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "explore-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	typo := bytes.Replace(b, []byte("completionMode: Indexed"), []byte("completionMode: Indexed\n  completionsMode: Indexed"), 1)
	if bytes.Equal(typo, b) {
		t.Fatal("the manifest has no completionMode: Indexed line to put a typo beside")
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(typo, &job); err == nil || !strings.Contains(err.Error(), "completionsMode") {
		t.Errorf("an unknown field decoded without an error naming it: %v", err)
	}
}

// indexedJob is what the tests read from deploy/explore-job.yaml.
type indexedJob struct {
	job         *batchv1.Job
	container   corev1.Container
	completions int
	args        []string
}

func exploreJob(t *testing.T) indexedJob {
	t.Helper()
	job := readJob(t, "explore-job.yaml")
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v: want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || *s.Completions < 2 || s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > *s.Completions {
		t.Fatalf("completions %v, parallelism %v: want N >= 2 and 1 <= P <= N", s.Completions, s.Parallelism)
	}
	cs := s.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers: want the one explore", len(cs))
	}
	return indexedJob{job: job, container: cs[0], completions: int(*s.Completions), args: append(slices.Clone(cs[0].Command), cs[0].Args...)}
}

// TestExploreJobManifest checks the fields issue 18 names: Indexed, N
// completions and P at once, each pod running -shard auto/N with the same
// N into the shared volume, sized requests and limits, retries per index,
// clean-up, and a non-root pod.
func TestExploreJobManifest(t *testing.T) {
	j := exploreJob(t)
	s, pod, c := j.job.Spec, j.job.Spec.Template.Spec, j.container
	if !slices.Contains(j.args, fmt.Sprintf("-shard=auto/%d", j.completions)) {
		t.Errorf("args %q: want -shard=auto/%d (N = completions)", j.args, j.completions)
	}
	if !slices.Contains(j.args, "-json=/results/shard-$(JOB_COMPLETION_INDEX).json") {
		t.Errorf("args %q: want -json=/results/shard-$(JOB_COMPLETION_INDEX).json", j.args)
	}
	// The args are explore's: parsed as the pod would, with its index.
	t.Setenv(jobIndexVar, strconv.Itoa(j.completions-1))
	o, err := parse(podArgs(j.args, j.completions-1, t.TempDir()), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("explore refuses the pod's args %q: %v", j.args, err)
	}
	if o.shardI != j.completions-1 || o.shardN != j.completions || o.seedRandom {
		t.Errorf("the last pod runs shard %d/%d (fresh range %v): want %d/%d of a fixed range", o.shardI, o.shardN, o.seedRandom, j.completions-1, j.completions)
	}
	// /results is a mounted PersistentVolumeClaim.
	claim := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/results" {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
	}
	if claim == "" {
		t.Errorf("/results is not a mounted PersistentVolumeClaim: mounts %v, volumes %v", c.VolumeMounts, pod.Volumes)
	}
	checkPVC(t, claim)
	// Requests from the measured 490 seeds/s on 2 cores and ~170 MB peak:
	// at least 1 CPU and the peak below the memory limit.
	req, lim := c.Resources.Requests, c.Resources.Limits
	const mi = 1 << 20
	if req.Cpu().MilliValue() < 1000 || req.Memory().Value() < 128*mi || lim.Memory().Value() < 256*mi ||
		lim.Memory().Value() < req.Memory().Value() || lim.Cpu().MilliValue() < req.Cpu().MilliValue() {
		t.Errorf("resources: requests %v, limits %v: want cpu >= 1, memory request >= 128Mi, a memory limit >= 256Mi, limits >= requests", req, lim)
	}
	if s.BackoffLimitPerIndex == nil && s.BackoffLimit == nil {
		t.Error("neither backoffLimitPerIndex nor backoffLimit")
	}
	if s.TTLSecondsAfterFinished == nil {
		t.Error("no ttlSecondsAfterFinished")
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q: want Never (podFailurePolicy needs it)", pod.RestartPolicy)
	}
	checkNonRoot(t, pod, c)
	// Explore's exit 1 (a violation) is an answer: not retried.
	found := false
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			if r.OnExitCodes != nil && slices.Contains(r.OnExitCodes.Values, exitViolation) && r.Action != batchv1.PodFailurePolicyActionCount {
				found = true
			}
		}
	}
	if !found {
		t.Error("no podFailurePolicy rule keeps exit 1 (a violation found) from being retried")
	}
}

// podArgs is what a pod of index i runs, with the volume at dir: the
// kubelet's $(JOB_COMPLETION_INDEX) expansion, done by hand.
func podArgs(args []string, i int, dir string) []string {
	out := make([]string, len(args))
	for k, a := range args {
		a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))
		out[k] = strings.ReplaceAll(a, "/results", dir)
	}
	return out
}

func checkNonRoot(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
	}
	if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v: want allowPrivilegeEscalation false", csc)
	}
}

func checkPVC(t *testing.T, claim string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "results-pvc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pvc corev1.PersistentVolumeClaim
	if err := yaml.UnmarshalStrict(b, &pvc); err != nil {
		t.Fatalf("deploy/results-pvc.yaml: %v", err)
	}
	if pvc.Kind != "PersistentVolumeClaim" || pvc.Name != claim || !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("deploy/results-pvc.yaml: %s %q, access %v: want the PersistentVolumeClaim %q, ReadWriteMany (pods on many nodes write it)",
			pvc.Kind, pvc.Name, pvc.Spec.AccessModes, claim)
	}
}

// TestMergeJobManifest: the merge Job reads exactly the N summaries the
// Indexed Job writes, from the same claim, once, as a non-root pod.
func TestMergeJobManifest(t *testing.T) {
	n := exploreJob(t).completions
	job := readJob(t, "merge-job.yaml")
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers: want one", len(pod.Containers))
	}
	c := pod.Containers[0]
	args := append(slices.Clone(c.Command), c.Args...)
	var files []string
	for _, a := range args {
		if strings.HasPrefix(a, "/results/shard-") {
			files = append(files, a)
		}
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("/results/shard-%d.json", i))
	}
	if len(args) == 0 || args[0] != "merge" || !slices.Equal(files, want) {
		t.Errorf("args %q: want merge ... and the %d shard files %q", args, n, want)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("backoffLimit %v: want 0 (a merge's exit 1 or 2 is an answer)", job.Spec.BackoffLimit)
	}
	claim := ""
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	checkPVC(t, claim)
	checkNonRoot(t, pod, c)
}

// TestShardAuto: -shard auto/N takes the index from JOB_COMPLETION_INDEX;
// without it, or with an index that is not one of N, explore refuses
// (exit 2) naming the variable.
func TestShardAuto(t *testing.T) {
	t.Setenv(jobIndexVar, "2")
	o, err := parse([]string{"-world", "pair", "-seeds", "10", "-shard", "auto/4"}, &bytes.Buffer{})
	if err != nil || o.shardI != 2 || o.shardN != 4 {
		t.Fatalf("-shard auto/4 with %s=2: %v, shard %d/%d", jobIndexVar, err, o.shardI, o.shardN)
	}
	for _, c := range []struct {
		index string // "unset": not in the environment
		shard string
		says  string
	}{
		{"unset", "auto/4", "JOB_COMPLETION_INDEX"},
		{"", "auto/4", `JOB_COMPLETION_INDEX=""`},
		{"x", "auto/4", `JOB_COMPLETION_INDEX="x"`},
		{"4", "auto/4", `JOB_COMPLETION_INDEX="4"`},
		{"-1", "auto/4", `JOB_COMPLETION_INDEX="-1"`},
		{"0", "auto/0", "auto/N with N >= 1"},
		{"0", "auto/x", "auto/N with N >= 1"},
	} {
		t.Run(c.index+"-"+c.shard, func(t *testing.T) {
			t.Setenv(jobIndexVar, c.index)
			if c.index == "unset" {
				os.Unsetenv(jobIndexVar)
			}
			code, out, errOut := cli(t, "-world", "pair", "-seeds", "10", "-shard", c.shard)
			if code != exitUsage || !strings.Contains(errOut, c.says) || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q: want exit 2 saying %q and nothing run", code, errOut, out, c.says)
			}
		})
	}
}

// TestIndexedJobLocally emulates the Indexed Job on this machine: one real
// explore process per index, each with JOB_COMPLETION_INDEX set as
// Kubernetes sets it and the manifest's own args (with a smaller seed
// count and a temporary directory for the volume), all at once; then
// explore merge over their summaries, compared with one process running
// the same seeds.
func TestIndexedJobLocally(t *testing.T) {
	bin := builtExplore(t)
	j := exploreJob(t)
	dir := t.TempDir()
	const seeds = 800
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range j.completions {
		args := podArgs(j.args, i, dir)
		for k, a := range args {
			if strings.HasPrefix(a, "-seeds=") {
				args[k] = fmt.Sprintf("-seeds=%d", seeds)
			}
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", jobIndexVar, i))
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, &b)
	}
	var shardFiles []string
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("pod %d: %v\n%s", i, err, outs[i])
		}
		shardFiles = append(shardFiles, filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)))
	}
	merged := filepath.Join(dir, "merged.json")
	if out, err := exec.Command(bin, append([]string{"merge", "-json", merged}, shardFiles...)...).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	one := t.TempDir()
	if out, err := exec.Command(bin, "-seeds", strconv.Itoa(seeds), "-seed-start=1", "-json", filepath.Join(one, "s.json")).CombinedOutput(); err != nil {
		t.Fatalf("one process: %v\n%s", err, out)
	}
	want := summaryWithoutTiming(t, filepath.Join(one, "s.json"), one)
	got := summaryWithoutTiming(t, merged, dir)
	if got != want {
		t.Errorf("the merged pods' summary differs from one process's at %s", firstDiff(want, got))
	}
	if !strings.Contains(got, fmt.Sprintf(`"seeds_run": %d`, seeds)) {
		t.Errorf("the merged summary does not count %d seeds run", seeds)
	}
}
