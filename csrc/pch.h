// Precompiled header: the heavy torch headers nearly every translation unit needs.
#pragma once
#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
