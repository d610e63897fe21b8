// SageMaker instance types carve places on: GPU model and count, host vCPUs and memory, price.
//
// Shapes (GPUs, vCPUs, memory) are AWS's published instance specifications (ml.* types share
// the EC2 shapes; sources per family below). Prices, in this order of preference:
//   1. the reference's SageMaker on-demand figure (mig-catalog.json aws_instance_families);
//   2. the EC2 on-demand us-east-1 Linux list price, named as such in price_source, because
//      SageMaker charges more than EC2 for the same shape; figures from the instances.vantage.sh
//      price data (snapshot 2026-08, as collected in github.com/tsaol/aws-gpu data/*.js);
//   3. 0 with the reason.
// A config file can override any price (price_overrides.h).
#include "catalog/data/tables.h"

namespace carve::catalog::data {
namespace {

constexpr int64_t kGiB = 1024;
constexpr std::string_view kSeedPrice =
    "SageMaker on-demand us-west-2 from the seed text, via mig-catalog.json (not re-verified)";
constexpr std::string_view kEc2Price =
    "EC2 on-demand us-east-1 Linux list price (instances.vantage.sh, 2026-08); SageMaker ml.* "
    "costs more: override with the real SageMaker rate";
constexpr std::string_view kP5eNoPrice =
    "0: p5e has no public on-demand price (capacity blocks only; mig-catalog.json lists a $43.26/h "
    "Capacity Blocks rate, which is not on-demand); set one with a price override";

// p4d/p4de (https://aws.amazon.com/ec2/instance-types/p4/), p5/p5e/p5en
// (https://aws.amazon.com/ec2/instance-types/p5/), p6-b200
// (https://aws.amazon.com/ec2/instance-types/p6/). ml.p5.4xlarge is the 1-GPU P5 size.
constexpr InstanceType kTypes[] = {
    {"ml.p4d.24xlarge", "a100-40gb", 8, 96, 1152 * kGiB, 25.251286, kSeedPrice},
    {"ml.p4de.24xlarge", "a100-80gb", 8, 96, 1152 * kGiB, 27.44705, kEc2Price},
    {"ml.p5.48xlarge", "h100-80gb", 8, 192, 2048 * kGiB, 63.296, kSeedPrice},
    {"ml.p5.4xlarge", "h100-80gb", 1, 16, 256 * kGiB, 6.88, kEc2Price},
    {"ml.p5e.48xlarge", "h200-141gb", 8, 192, 2048 * kGiB, 0, kP5eNoPrice},
    {"ml.p5en.48xlarge", "h200-141gb", 8, 192, 2048 * kGiB, 63.296, kEc2Price},
    {"ml.p6-b200.48xlarge", "b200-180gb", 8, 192, 2048 * kGiB, 113.9328, kEc2Price},
    // G7e, RTX PRO 6000 Blackwell Server Edition: shapes from kubernetes/autoscaler issue 9854 and
    // aws/sagemaker-hyperpod-cli PR 390 (which lists the ml.g7e sizes).
    {"ml.g7e.2xlarge", "rtx-pro-6000", 1, 8, 64 * kGiB, 3.36312, kEc2Price},
    {"ml.g7e.4xlarge", "rtx-pro-6000", 1, 16, 128 * kGiB, 3.99816, kEc2Price},
    {"ml.g7e.8xlarge", "rtx-pro-6000", 1, 32, 256 * kGiB, 5.26824, kEc2Price},
    {"ml.g7e.12xlarge", "rtx-pro-6000", 2, 48, 512 * kGiB, 8.28608, kEc2Price},
    {"ml.g7e.24xlarge", "rtx-pro-6000", 4, 96, 1024 * kGiB, 16.57216, kEc2Price},
    {"ml.g7e.48xlarge", "rtx-pro-6000", 8, 192, 2048 * kGiB, 33.14432, kEc2Price},
    // G7, RTX PRO 4500 Blackwell Server Edition: shapes and GPU counts (1,1,2,4,4,8) from
    // mig-catalog.json and kubernetes/autoscaler issue 9854. The vantage data disagrees on the
    // counts of g7.8xlarge (1) and g7.12xlarge (2); the reference wins until AWS's page is checked.
    {"ml.g7.2xlarge", "rtx-pro-4500", 1, 8, 32 * kGiB, 2.52, kEc2Price},
    {"ml.g7.4xlarge", "rtx-pro-4500", 1, 16, 64 * kGiB, 3.04208, kEc2Price},
    {"ml.g7.8xlarge", "rtx-pro-4500", 2, 32, 128 * kGiB, 4.08624, kEc2Price},
    {"ml.g7.12xlarge", "rtx-pro-4500", 4, 48, 192 * kGiB, 7.12832, kEc2Price},
    {"ml.g7.24xlarge", "rtx-pro-4500", 4, 96, 384 * kGiB, 14.25664, kEc2Price},
    {"ml.g7.48xlarge", "rtx-pro-4500", 8, 192, 768 * kGiB, 28.51328, kEc2Price},
    // G5, A10G: https://aws.amazon.com/ec2/instance-types/g5/
    {"ml.g5.xlarge", "a10g", 1, 4, 16 * kGiB, 1.006, kEc2Price},
    {"ml.g5.2xlarge", "a10g", 1, 8, 32 * kGiB, 1.212, kEc2Price},
    {"ml.g5.4xlarge", "a10g", 1, 16, 64 * kGiB, 1.624, kEc2Price},
    {"ml.g5.8xlarge", "a10g", 1, 32, 128 * kGiB, 2.448, kEc2Price},
    {"ml.g5.16xlarge", "a10g", 1, 64, 256 * kGiB, 4.096, kEc2Price},
    {"ml.g5.12xlarge", "a10g", 4, 48, 192 * kGiB, 5.672, kEc2Price},
    {"ml.g5.24xlarge", "a10g", 4, 96, 384 * kGiB, 8.144, kEc2Price},
    {"ml.g5.48xlarge", "a10g", 8, 192, 768 * kGiB, 16.288, kEc2Price},
    // G6, L4: https://aws.amazon.com/ec2/instance-types/g6/
    {"ml.g6.xlarge", "l4", 1, 4, 16 * kGiB, 0.8048, kEc2Price},
    {"ml.g6.2xlarge", "l4", 1, 8, 32 * kGiB, 0.9776, kEc2Price},
    {"ml.g6.4xlarge", "l4", 1, 16, 64 * kGiB, 1.3232, kEc2Price},
    {"ml.g6.8xlarge", "l4", 1, 32, 128 * kGiB, 2.0144, kEc2Price},
    {"ml.g6.16xlarge", "l4", 1, 64, 256 * kGiB, 3.3968, kEc2Price},
    {"ml.g6.12xlarge", "l4", 4, 48, 192 * kGiB, 4.6016, kEc2Price},
    {"ml.g6.24xlarge", "l4", 4, 96, 384 * kGiB, 6.6752, kEc2Price},
    {"ml.g6.48xlarge", "l4", 8, 192, 768 * kGiB, 13.3504, kEc2Price},
    // G6e, L40S: https://aws.amazon.com/ec2/instance-types/g6e/
    {"ml.g6e.xlarge", "l40s", 1, 4, 32 * kGiB, 1.861, kEc2Price},
    {"ml.g6e.2xlarge", "l40s", 1, 8, 64 * kGiB, 2.24208, kEc2Price},
    {"ml.g6e.4xlarge", "l40s", 1, 16, 128 * kGiB, 3.00424, kEc2Price},
    {"ml.g6e.8xlarge", "l40s", 1, 32, 256 * kGiB, 4.52856, kEc2Price},
    {"ml.g6e.16xlarge", "l40s", 1, 64, 512 * kGiB, 7.57719, kEc2Price},
    {"ml.g6e.12xlarge", "l40s", 4, 48, 384 * kGiB, 10.49264, kEc2Price},
    {"ml.g6e.24xlarge", "l40s", 4, 96, 768 * kGiB, 15.06559, kEc2Price},
    {"ml.g6e.48xlarge", "l40s", 8, 192, 1536 * kGiB, 30.13118, kEc2Price},
};

}  // namespace

std::span<const InstanceType> InstanceTypes() { return kTypes; }

}  // namespace carve::catalog::data
