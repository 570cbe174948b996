/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Writing a DIR-16-8-8 image (mapimg.h) into one slot of fg_dir4 and fg_blk4. */
#ifndef FG_DIR4MAP_H
#define FG_DIR4MAP_H

#include "maps/mapimg.h"

/*
 * Into slot `slot`, which no packet may be reading (the inactive one): a
 * new fg_blk4 inner map of exactly img->nblk blocks (none: the slot's entry
 * is deleted, freeing the old blocks), then fg_dir4[slot]. 0 or -errno.
 */
int fg_dir4_write(int dir_fd, int blk_fd, __u32 slot, const struct fg_dir4_img *img);

#endif /* FG_DIR4MAP_H */
