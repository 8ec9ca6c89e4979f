#pragma once
// The one place the ZooKeeper C client header is included. Its synchronous calls are declared
// only with THREADED; avout uses the multi-threaded library (zookeeper_mt) and async calls.
#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>
