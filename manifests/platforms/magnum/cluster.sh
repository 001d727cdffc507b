#!/usr/bin/env bash
# An OpenStack Magnum cluster for mongobench through Magnum's Cluster API driver
# (magnum-capi-helm, driver k8s_capi_helm_v1), with the openstack CLI (python-openstackclient and
# python-magnumclient) and your cloud's credentials (an openrc file or clouds.yaml + OS_CLOUD).
#
# Written for: Magnum 2024.1 (Caracal) or newer with magnum-capi-helm 1.1 or newer enabled by the
# cloud (the Heat driver and its fedora-coreos templates are deprecated and stop far below the
# chart's Kubernetes >= 1.30), an Ubuntu Kubernetes image of the Azimuth image builds
# (azimuth-images) for Kubernetes v1.31. Magnum picks the Cluster API driver from the image's
# properties, os_distro=ubuntu and kube_version=v1.x.y: this script refuses an image without them
# or with a Kubernetes below 1.30 before it creates anything.
#
# Node groups by role: Magnum labels each node magnum.openstack.org/role=<role>, which the
# samples' nodeSelectors use: `database` for mongod/mongos, `clients` for benchmark pods; the
# default worker group runs the operator and Prometheus.
#   IMAGE (required: the Glance image name or ID), KEYPAIR, EXTERNAL_NETWORK, FLAVOR_* and CLUSTER
#   override the defaults below.
set -euo pipefail
CLUSTER=${CLUSTER:-mongobench}
IMAGE=${IMAGE:?set IMAGE to an Ubuntu Kubernetes image (properties os_distro=ubuntu, kube_version>=v1.30)}
KEYPAIR=${KEYPAIR:-default}
EXTERNAL_NETWORK=${EXTERNAL_NETWORK:-public}
FLAVOR_MASTER=${FLAVOR_MASTER:-m1.medium}
FLAVOR_SYSTEM=${FLAVOR_SYSTEM:-m1.large}
FLAVOR_DATABASE=${FLAVOR_DATABASE:-m1.xlarge}
FLAVOR_CLIENTS=${FLAVOR_CLIENTS:-m1.xlarge}
MIN_KUBE_MINOR=30  # charts/mongobench/Chart.yaml kubeVersion >=1.30

# python3 is there wherever the openstack CLI is (a Python program).
image_property() {
  openstack image show "$IMAGE" -f json -c properties \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["properties"].get(sys.argv[1], ""))' "$1"
}
os_distro=$(image_property os_distro)
kube_version=$(image_property kube_version)
if [ "$os_distro" != ubuntu ] || [ -z "$kube_version" ]; then
  echo "image $IMAGE lacks os_distro=ubuntu and kube_version: Magnum would not use its Cluster API driver" >&2
  exit 1
fi
minor=$(echo "$kube_version" | sed -n 's/^v\{0,1\}1\.\([0-9]*\)\..*/\1/p')
if [ -z "$minor" ] || [ "$minor" -lt "$MIN_KUBE_MINOR" ]; then
  echo "image $IMAGE has Kubernetes $kube_version; the mongobench chart needs >= 1.$MIN_KUBE_MINOR" >&2
  exit 1
fi

# Cinder CSI (volumes, grown in place) comes with the driver's cluster add-ons; no Magnum-made
# monitoring or dashboard (kube-prometheus-stack is installed with Helm instead). The driver
# takes the Kubernetes version from the image (kube_version), not from a kube_tag label.
openstack coe cluster template create "$CLUSTER-template" \
  --coe kubernetes \
  --image "$IMAGE" \
  --keypair "$KEYPAIR" \
  --external-network "$EXTERNAL_NETWORK" \
  --master-flavor "$FLAVOR_MASTER" \
  --flavor "$FLAVOR_SYSTEM" \
  --master-lb-enabled \
  --labels monitoring_enabled=false,kube_dashboard_enabled=false

openstack coe cluster create "$CLUSTER" \
  --cluster-template "$CLUSTER-template" \
  --master-count 1 \
  --node-count 2

openstack coe cluster show "$CLUSTER" -f value -c status
echo "waiting for $CLUSTER to be CREATE_COMPLETE (about 10 minutes)" >&2
until [ "$(openstack coe cluster show "$CLUSTER" -f value -c status)" = CREATE_COMPLETE ]; do
  sleep 30
done

openstack coe nodegroup create "$CLUSTER" database --role database --flavor "$FLAVOR_DATABASE" \
  --node-count 3
openstack coe nodegroup create "$CLUSTER" clients --role clients --flavor "$FLAVOR_CLIENTS" \
  --node-count 2

openstack coe cluster config "$CLUSTER" --dir . --force  # writes ./config (a kubeconfig)
echo "export KUBECONFIG=$PWD/config" >&2
