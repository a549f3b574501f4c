package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	pickymanv1 "github.com/pickyman/pickyman/api/v1alpha1"
	"github.com/pickyman/pickyman/traces"
)

// TestSubmissionRetriesTransientRefusals: a job refused because the API server could not call
// PickyMan's webhook (the operator restarting) is submitted again until it is accepted; a
// denial is not retried; a refusal that lasts past the retry window is returned.
func TestSubmissionRetriesTransientRefusals(t *testing.T) {
	s := runtime.NewScheme()
	if err := kftraining.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	webhookDown := apierrors.NewInternalError(errors.New(`failed calling webhook "mpytorchjob.pickyman.dev": connect: connection refused`))
	// The API server itself restarting: the connection is refused or cut.
	apiDown := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/apis/kubeflow.org/v1/namespaces/ns/pytorchjobs",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	apiReset := &url.Error{Op: "Post", URL: "https://127.0.0.1:6443/", Err: io.ErrUnexpectedEOF}
	denied := apierrors.NewForbidden(schema.GroupResource{Group: "kubeflow.org", Resource: "pytorchjobs"}, "j", errors.New("unknown queue"))
	for name, tc := range map[string]struct {
		refusals  int
		err       error
		retry     time.Duration
		wantCalls int
		wantErr   bool
	}{
		"webhook down twice":    {refusals: 2, err: webhookDown, retry: time.Minute, wantCalls: 3},
		"API server restarting": {refusals: 3, err: apiDown, retry: time.Minute, wantCalls: 4},
		"API server cut":        {refusals: 1, err: apiReset, retry: time.Minute, wantCalls: 2},
		"denied":                {refusals: 1, err: denied, retry: time.Minute, wantCalls: 1, wantErr: true},
		"webhook down for good": {refusals: 1000, err: webhookDown, retry: time.Second, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					calls++
					if calls <= tc.refusals {
						return tc.err
					}
					return c.Create(ctx, obj, opts...)
				},
			}).Build()
			job := &kftraining.PyTorchJob{}
			job.Name, job.Namespace = "j", "ns"
			var log bytes.Buffer
			err := createRetrying(context.Background(), c, job, tc.retry, &log)
			if (err != nil) != tc.wantErr {
				t.Fatalf("createRetrying: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantCalls > 0 && calls != tc.wantCalls {
				t.Errorf("%d create calls, want %d", calls, tc.wantCalls)
			}
			if !tc.wantErr {
				if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "j"}, &kftraining.PyTorchJob{}); err != nil {
					t.Errorf("job not created: %v", err)
				}
				if tc.refusals > 0 && (!bytes.Contains(log.Bytes(), []byte("retrying")) || !bytes.Contains(log.Bytes(), []byte(fmt.Sprintf("accepted at attempt %d", tc.wantCalls)))) {
					t.Errorf("no progress lines about the retry and the acceptance: %q", log.String())
				}
			}
		})
	}
}

// TestFollowWaitsForTheAPIServer: the replay's follower outlasts an API server that restarts
// (its lists refused for a while) and says so; one that stays away longer than Stuck fails the
// replay naming why; any other error fails it at once.
func TestFollowWaitsForTheAPIServer(t *testing.T) {
	followInterval = 10 * time.Millisecond
	t.Cleanup(func() { followInterval = 2 * time.Second })
	s := runtime.NewScheme()
	if err := pickymanv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	apiDown := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis/pickyman.dev/v1alpha1/namespaces/ns/allocations",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for name, tc := range map[string]struct {
		failures int
		err      error
		stuck    time.Duration
		wantErr  string
	}{
		"restarted":     {failures: 5, err: apiDown, stuck: time.Minute},
		"gone for good": {failures: 1 << 30, err: apiDown, stuck: 200 * time.Millisecond, wantErr: "has not answered for"},
		"forbidden":     {failures: 1, err: apierrors.NewForbidden(schema.GroupResource{Resource: "allocations"}, "", errors.New("no")), stuck: time.Minute, wantErr: "forbidden"},
	} {
		t.Run(name, func(t *testing.T) {
			a := &pickymanv1.Allocation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pytorchjob-t00000"}}
			a.Status.Phase = pickymanv1.AllocationFinished
			lists := 0
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(a).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					lists++
					if lists <= tc.failures {
						return tc.err
					}
					return c.List(ctx, list, opts...)
				},
			}).Build()
			sub := newSubmitter(1)
			sub.n = 1
			var log bytes.Buffer
			o := Options{Name: "r", Namespace: "ns", Stuck: tc.stuck, TimeScale: 60, Progress: &log}
			err := follow(context.Background(), Clients{Client: c}, o, []traces.Job{traceJob("a", 1, 1)}, sub, time.Now())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("follow: %v\n%s", err, log.String())
				}
				for _, want := range []string{"API server unreachable", "API server answers again", "1 finished"} {
					if !strings.Contains(log.String(), want) {
						t.Errorf("progress lacks %q:\n%s", want, log.String())
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("follow: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
