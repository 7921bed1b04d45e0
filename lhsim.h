/* lhsim — the whole public API. Include this, or the module headers one by one. */
#pragma once

#include "sim/graph.h"
#include "sim/hw.h"
#include "sim/cost.h"
#include "sim/plan.h"
#include "sim/trace.h"
#include "sim/engine.h"
#include "sim/util.h"
#include "models/graph-json.h"
#include "models/models.h"
#include "models/gen.h"
#include "models/stg.h"
#include "models/hlo.h"
#include "models/pgle.h"
#include "schedulers/scheduler.h"
#include "backends/backend.h"
#include "viz/viz.h"
