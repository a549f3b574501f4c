package replay

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
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
	denied := apierrors.NewForbidden(schema.GroupResource{Group: "kubeflow.org", Resource: "pytorchjobs"}, "j", errors.New("unknown queue"))
	for name, tc := range map[string]struct {
		refusals  int
		err       error
		retry     time.Duration
		wantCalls int
		wantErr   bool
	}{
		"webhook down twice":    {refusals: 2, err: webhookDown, retry: time.Minute, wantCalls: 3},
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
				if tc.refusals > 0 && !bytes.Contains(log.Bytes(), []byte("retrying")) {
					t.Errorf("no progress line about the retry: %q", log.String())
				}
			}
		})
	}
}
