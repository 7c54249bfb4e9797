"""Job behaviour: upstream semantics for the kubeflow.org/v1 kinds (defaults, desired pods and services, status rules, run policies, gang scheduling, MPI, HPA) on top of controller.runtime."""
