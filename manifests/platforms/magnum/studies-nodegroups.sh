#!/usr/bin/env bash
# Node groups for the studies of manifests/studies on the Magnum cluster of cluster.sh, one study
# at a time (openstack CLI with python-magnumclient, your cloud's credentials as for cluster.sh):
#   manifests/platforms/magnum/studies-nodegroups.sh create 1   # not run here: needs an OpenStack cloud with Magnum
#   manifests/platforms/magnum/studies-nodegroups.sh delete 1   # not run here: needs an OpenStack cloud with Magnum
# Magnum labels each node magnum.openstack.org/role=study-N, which the study's database pods
# require (placement.nodeAffinity). Benchmark clients run on cluster.sh's `clients` group, except
# study 2's, which join the mongod on its study-2 node: its cell of 128 processes needs a kubelet
# that takes more than the default 110 pods (the cluster template's kubelet options), or it
# fails at its start.
# Study 4 needs no group of its own: its cluster fits cluster.sh's `database` group.
#   CLUSTER and FLAVOR_STUDY1/2/3 override the defaults below.
set -euo pipefail
CLUSTER=${CLUSTER:-mongobench}
# Study 1's VMs had 1 vCPU and 2 GB: the pods of a node are held to that by their limits, and the
# node is larger (kubelet, CNI, node-exporter): a 2 vCPU / 4 GB flavour (m1.medium by the
# OpenStack defaults). Study 2 compared 4 sizes: one group (and one apply) per flavour.
FLAVOR_STUDY1=${FLAVOR_STUDY1:-m1.medium}
FLAVOR_STUDY2=${FLAVOR_STUDY2:-m1.medium}
FLAVOR_STUDY3=${FLAVOR_STUDY3:-m1.medium}

usage() {
  echo "usage: $0 create|delete 1|2|3" >&2
  exit 2
}
[ $# -eq 2 ] || usage
action=$1
study=$2
case "$study" in
  # Study 1: 3-node, 5-node and 3 x 3 "production" layouts, one at a time: 9 nodes at most.
  1) flavor=$FLAVOR_STUDY1 nodes=9 ;;
  # Study 2: one mongod, one node.
  2) flavor=$FLAVOR_STUDY2 nodes=1 ;;
  # Study 3: every process on a node of its own (Dedicated); one factor at a time, its largest
  # cell is 7 shards of 1 member + 1 config server + 1 mongos = 9 nodes.
  3) flavor=$FLAVOR_STUDY3 nodes=9 ;;
  *) usage ;;
esac
case "$action" in
  create)
    openstack coe nodegroup create "$CLUSTER" "study-$study" --role "study-$study" \
      --flavor "$flavor" --node-count "$nodes"
    ;;
  delete)
    openstack coe nodegroup delete "$CLUSTER" "study-$study"
    ;;
  *) usage ;;
esac
