package object

import "github.com/stewardhq/steward/webhooks/admissiontest"

// deployment is a Deployment as the API server sends it, with the
// bookkeeping that makes up most of a real object's bytes.
const deployment = admissiontest.FleetDeployment
