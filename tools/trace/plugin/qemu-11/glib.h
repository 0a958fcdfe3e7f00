/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What qemu-plugin.h and vgsp-ktrace.c need of glib: the two types the plugin
 * API names (GArray, the register list; GByteArray, a register's bytes) in
 * glib's public layout, stable since glib 2.0, and the three functions the
 * plugin calls on them, which QEMU's own glib provides once the plugin is
 * loaded. glib's development files are not needed.
 */
#ifndef VGSP_GLIB_H
#define VGSP_GLIB_H

typedef unsigned int guint;
typedef unsigned char guint8;
typedef char gchar;
typedef int gboolean;

typedef struct _GArray {
	gchar *data;
	guint len;
} GArray;

typedef struct _GByteArray {
	guint8 *data;
	guint len;
} GByteArray;

GByteArray *g_byte_array_new(void);
GByteArray *g_byte_array_set_size(GByteArray *array, guint length);
gchar *g_array_free(GArray *array, gboolean free_segment);

#endif /* VGSP_GLIB_H */
