// The addon version. Both build files pass the package.json version as PLATFORM_VERSION.
#pragma once

#define PLATFORM_STRINGIFY_(x) #x
#define PLATFORM_STRINGIFY(x) PLATFORM_STRINGIFY_(x)

#ifdef PLATFORM_VERSION
#define PLATFORM_VERSION_STRING PLATFORM_STRINGIFY(PLATFORM_VERSION)
#else
#define PLATFORM_VERSION_STRING "0.0.0-dev"
#endif
