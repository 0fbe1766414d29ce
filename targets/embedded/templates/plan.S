/* The plan linked into the library (make EMBED_PLAN=1, or cmake -DEMBED_PLAN=ON): @MODEL@_create_embedded opens it
   in place, so no file is read at run time. The assembler finds model/@MODEL@.epk from the bundle's folder. */
    .section .rodata
    .balign 64
    .global @MODEL@_plan
    .global @MODEL@_plan_end
@MODEL@_plan:
    .incbin "model/@MODEL@.epk"
@MODEL@_plan_end:
    .section .note.GNU-stack,"",%progbits
