// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fg_dir4 and fg_blk4 writer; see dir4map.h. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>

#include "maps/dir4map.h"

/* A filled inner map of img's blocks: its fd, or -errno. The map is
 * mmapable (as the program's template says), so the fill is one memcpy. */
static int blk4_create(const struct fg_dir4_img *img)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	size_t len = (size_t)img->nblk * sizeof(struct fg_blk4);
	long pg = sysconf(_SC_PAGESIZE);
	void *p;
	int fd, err;

	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fg_blk4_slot", sizeof(__u32),
			    sizeof(struct fg_blk4), img->nblk, &o);
	if (fd < 0)
		return -errno;
	p = mmap(NULL, (len + pg - 1) / pg * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	memcpy(p, img->blk, len);
	munmap(p, (len + pg - 1) / pg * pg);
	return fd;
}

int fg_dir4_write(int dir_fd, int blk_fd, __u32 slot, const struct fg_dir4_img *img)
{
	int fd, err = 0;

	if (img->nblk) {
		fd = blk4_create(img);
		if (fd < 0)
			return fd;
		if (bpf_map_update_elem(blk_fd, &slot, &fd, BPF_ANY))
			err = -errno;
		close(fd); /* fg_blk4 holds it now */
	} else if (bpf_map_delete_elem(blk_fd, &slot) && errno != ENOENT) {
		err = -errno;
	}
	if (!err && bpf_map_update_elem(dir_fd, &slot, &img->dir, BPF_ANY))
		err = -errno;
	return err;
}
