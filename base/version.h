/* version: kforge's release, shown by `kforge --version` and in the MCP
 * serverInfo. The Makefile may override it with -DKFORGE_VERSION=... */
#ifndef KF_VERSION_H
#define KF_VERSION_H

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.1.0"
#endif

#endif
