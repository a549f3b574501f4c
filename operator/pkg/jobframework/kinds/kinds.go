// Package kinds lists the job kinds the operator manages, one adapter package each under
// operator/pkg/jobframework (as Kueue's pkg/controller/jobs/<kind>): adding a kind touches
// its package and one line below.
package kinds

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pickyman/pickyman/operator/pkg/jobframework"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/pytorchjob"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/rayjob"
	"github.com/pickyman/pickyman/operator/pkg/jobframework/trainjob"
)

// Integrations lists the job kinds the operator manages.
func Integrations() []jobframework.Integration {
	return []jobframework.Integration{pytorchjob.Integration, rayjob.Integration, trainjob.Integration}
}

// Wrap adapts obj with the first integration that accepts it, or returns nil.
func Wrap(obj client.Object) jobframework.GenericJob {
	for _, in := range Integrations() {
		if j := in.Wrap(obj); j != nil {
			return j
		}
	}
	return nil
}
