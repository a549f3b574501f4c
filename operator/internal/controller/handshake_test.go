package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentv1alpha1 "github.com/pickyman/pickyman/api/agent/v1alpha1"
)

func TestAckOfIgnoresAcknowledgementsOutOfBounds(t *testing.T) {
	for name, tc := range map[string]struct {
		ack  string
		want bool
	}{
		"valid":           {ack: `{"requestId":"r1","epoch":4,"bytes":100,"seconds":2,"suspendSeconds":30}`, want: true},
		"another request": {ack: `{"requestId":"r0","epoch":4,"bytes":100,"seconds":2,"suspendSeconds":30}`},
		"malformed":       {ack: `{"requestId":`},
		"negative epoch":  {ack: `{"requestId":"r1","epoch":-1,"bytes":100,"seconds":2,"suspendSeconds":30}`},
		"absurd epoch":    {ack: `{"requestId":"r1","epoch":2000000000,"bytes":100,"seconds":2,"suspendSeconds":30}`},
		"negative bytes":  {ack: `{"requestId":"r1","epoch":4,"bytes":-100,"seconds":2,"suspendSeconds":30}`},
		"absurd suspend":  {ack: `{"requestId":"r1","epoch":4,"bytes":100,"seconds":2,"suspendSeconds":1e9}`},
	} {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{agentv1alpha1.AnnotationCheckpointAck: tc.ack}}}
			if _, ok := ackOf(p, "r1"); ok != tc.want {
				t.Errorf("ackOf: acknowledged %v, want %v", ok, tc.want)
			}
		})
	}
}
