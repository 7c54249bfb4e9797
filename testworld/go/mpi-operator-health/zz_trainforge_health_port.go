// The test world's only addition to the mpi-operator: its leader-election health server
// listens on a port hard-coded to 8080 (cmd/mpi-operator/app's healthCheckPort, no flag),
// so two operators on one machine (two worlds side by side) would collide and the second
// would exit. This file is copied into that package of a writable copy of the module
// (testworld/mpi_operator.py) and lets TRAINFORGE_MPI_OPERATOR_HEALTH_PORT choose the port.
// Nothing else of the operator changes.
package app

import (
	"os"
	"strconv"
)

func init() {
	if port, err := strconv.Atoi(os.Getenv("TRAINFORGE_MPI_OPERATOR_HEALTH_PORT")); err == nil && port > 0 {
		healthCheckPort = port
	}
}
