package profilestore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pickyman/pickyman/api/v1alpha1"
	utiltesting "github.com/pickyman/pickyman/operator/internal/testing"
	"github.com/pickyman/pickyman/operator/pkg/profile"
)

func newStore(t *testing.T) *Store {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha1.ModelProfile{}).Build()
	return New(c, clocktesting.NewFakeClock(utiltesting.Epoch))
}

func TestStoreRoundTrip(t *testing.T) {
	st := newStore(t)
	if _, err := st.Get("resnet50"); !errors.Is(err, profile.ErrNotFound) {
		t.Fatalf("Get of a missing model: %v, want ErrNotFound", err)
	}
	p := profile.Profile{Model: "resnet50"}
	for i, g := range []int32{1, 2, 4, 8} {
		p.Add(profile.Sample{JobID: string(rune('a' + i)), GPUs: g, EpochTime: time.Duration(10+80/g) * time.Second}, 0)
	}
	if err := st.Update(p); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get("resnet50")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("Get after Update (-want +got):\n%s", diff)
	}
	var mp v1alpha1.ModelProfile
	if err := st.c.Get(t.Context(), clientKey("resnet50"), &mp); err != nil {
		t.Fatal(err)
	}
	if f := mp.Status.Fit; f == nil || !f.Trusted || f.Samples != 4 || f.AMillis != 10000 || f.BMillis != 80000 {
		t.Errorf("fit %+v, want trusted A=10000ms B=80000ms over 4 samples", f)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
}

func TestObjectName(t *testing.T) {
	cases := map[string]string{
		"resnet50":        "resnet50",
		"bert.base":       "bert.base",
		"GPT-2/XL":        "gpt-2-xl-",
		"llama 3 (70B)!!": "llama-3--70b-",
	}
	for model, prefix := range cases {
		got := ObjectName(model)
		if len(got) < len(prefix) || got[:len(prefix)] != prefix {
			t.Errorf("ObjectName(%q) = %q, want prefix %q", model, got, prefix)
		}
	}
	if ObjectName("A") == ObjectName("a-") {
		t.Error("distinct models share an object name")
	}
}

func clientKey(model string) client.ObjectKey { return client.ObjectKey{Name: ObjectName(model)} }
