#!/usr/bin/env bash
# An OpenStack Magnum cluster for mongobench, with the openstack CLI (python-openstackclient and
# python-magnumclient) and your cloud's credentials (an openrc file or clouds.yaml + OS_CLOUD).
# Node groups by role: Magnum labels each node magnum.openstack.org/role=<role>, which the
# samples' nodeSelectors use: `database` for mongod/mongos, `clients` for benchmark pods; the
# default worker group runs the operator and Prometheus.
#   IMAGE, KEYPAIR, EXTERNAL_NETWORK, FLAVOR_* and CLUSTER override the defaults below.
set -euo pipefail
CLUSTER=${CLUSTER:-mongobench}
IMAGE=${IMAGE:-fedora-coreos-40}
KEYPAIR=${KEYPAIR:-default}
EXTERNAL_NETWORK=${EXTERNAL_NETWORK:-public}
FLAVOR_MASTER=${FLAVOR_MASTER:-m1.medium}
FLAVOR_SYSTEM=${FLAVOR_SYSTEM:-m1.large}
FLAVOR_DATABASE=${FLAVOR_DATABASE:-m1.xlarge}
FLAVOR_CLIENTS=${FLAVOR_CLIENTS:-m1.xlarge}

# Cinder CSI (volumes), the Cinder CSI resizer (claims grown in place), no Magnum-made
# monitoring (kube-prometheus-stack is installed with Helm instead).
openstack coe cluster template create "$CLUSTER-template" \
  --coe kubernetes \
  --image "$IMAGE" \
  --keypair "$KEYPAIR" \
  --external-network "$EXTERNAL_NETWORK" \
  --master-flavor "$FLAVOR_MASTER" \
  --flavor "$FLAVOR_SYSTEM" \
  --network-driver calico \
  --volume-driver cinder \
  --docker-storage-driver overlay2 \
  --labels cinder_csi_enabled=true,monitoring_enabled=false,auto_healing_enabled=false

openstack coe cluster create "$CLUSTER" \
  --cluster-template "$CLUSTER-template" \
  --master-count 1 \
  --node-count 2

openstack coe cluster show "$CLUSTER" -f value -c status
echo "waiting for $CLUSTER to be CREATE_COMPLETE (about 15 minutes)" >&2
until [ "$(openstack coe cluster show "$CLUSTER" -f value -c status)" = CREATE_COMPLETE ]; do
  sleep 30
done

openstack coe nodegroup create "$CLUSTER" database --role database --flavor "$FLAVOR_DATABASE" \
  --node-count 3
openstack coe nodegroup create "$CLUSTER" clients --role clients --flavor "$FLAVOR_CLIENTS" \
  --node-count 2

openstack coe cluster config "$CLUSTER" --dir . --force  # writes ./config (a kubeconfig)
echo "export KUBECONFIG=$PWD/config" >&2
